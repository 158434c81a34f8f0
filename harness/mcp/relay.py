"""``python -I -m harness.mcp.relay MESSAGE_CAP STDERR_CAP -- COMMAND [ARGS...]``: an MCP
server's stdio, relayed under caps.

The MCP client reads a server's stdout whole, one message per line, into memory before any
cap on a tool result applies (and the SDK's reader rebuilds its buffer on every chunk, so a
32 MB line costs seconds of the event loop); a server's stderr is kept in a log file. The
client starts each server through this relay instead, which:

- passes stdin through, and stdout line by line, each line read in linear time; a line over
  MESSAGE_CAP bytes is never passed on: the relay says so on stderr, stops the server and
  exits, and the client sees a server that failed (the task run is an error, named);
- passes at most STDERR_CAP bytes of stderr, then one line saying the rest was cut (the rest
  is still read, so the server never blocks on a full pipe);
- exits with the server's status. It runs in the server's process group, which the client
  stops as one.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading

CHUNK = 1 << 16


def _pump_stdin(source: int, sink: int) -> None:
    try:
        while chunk := os.read(source, CHUNK):
            os.write(sink, chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            os.close(sink)


def _pump_stderr(source: int, cap: int) -> None:
    passed = 0
    while chunk := os.read(source, CHUNK):
        if passed < cap:
            kept = chunk[: cap - passed]
            os.write(2, kept)
            passed += len(kept)
            if passed >= cap:
                os.write(2, f"\n[stderr cut: more than {cap} bytes]\n".encode())


def relay(message_cap: int, stderr_cap: int, command: list[str]) -> int:
    server = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert server.stdin and server.stdout and server.stderr
    threading.Thread(target=_pump_stdin, args=(0, server.stdin.fileno()), daemon=True).start()
    errors = threading.Thread(
        target=_pump_stderr, args=(server.stderr.fileno(), stderr_cap), daemon=True
    )
    errors.start()
    line = bytearray()
    out = server.stdout.fileno()
    while chunk := os.read(out, CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            line += chunk[start : end + 1]
            os.write(1, line)
            line.clear()
            start = end + 1
        line += chunk[start:]
        if len(line) > message_cap:
            os.write(
                2,
                f"\nrelay: the server sent a message of more than {message_cap} bytes, this "
                "client's cap; the server was stopped\n".encode(),
            )
            server.kill()
            server.wait()
            return 3
    status = server.wait()
    errors.join(timeout=5)
    return status


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 4 or args[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    return relay(int(args[0]), int(args[1]), args[3:])


if __name__ == "__main__":
    sys.exit(main())
