"""An MCP server over stdio that misbehaves as asked (``faulty.py MODE``), written as raw
JSON-RPC so it can break the protocol as no SDK server would. It writes its pid to the file
named by ``FAULTY_PID_FILE`` (when set), so a test can check it is gone afterwards.

Modes: ok (one tool, ``lookup``, that answers "the answer is 42"), exit_at_start, hang_init,
die_on_call, hang_call, megabytes (a 5 MB result), bad_schema (a tool whose input schema is not
a schema), bad_ref (one whose $ref points at nothing), slow_pattern (one whose pattern
backtracks exponentially), flood (a 40 MB result in one message), chatty (5 MB of stderr and
a megabyte-long serverInfo name), huge_listing (a megabyte description and a schema over the
cap), image (an image result), tool_error (a result with isError).
"""

from __future__ import annotations

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
BAD_SCHEMA = {"type": "object", "properties": {"key": {"type": "no-such-type"}}}
SCHEMAS = {
    "bad_schema": BAD_SCHEMA,
    # A pointer to nothing: a valid schema until the first call follows it.
    "bad_ref": {"type": "object", "properties": {"key": {"$ref": "#/$defs/nowhere"}}},
    # A pattern that backtracks exponentially on a short string that does not match.
    "slow_pattern": {
        "type": "object",
        "properties": {"key": {"type": "string", "pattern": "^(a|a)*$"}},
        "required": ["key"],
    },
}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(request: dict, value: dict) -> None:
    send({"jsonrpc": "2.0", "id": request["id"], "result": value})


def text(value: str, error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": error}


def main() -> None:
    if path := os.environ.get("FAULTY_PID_FILE"):
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    if MODE == "chatty":  # 5 MB on stderr before it serves, and a megabyte-long name
        for _ in range(5):
            sys.stderr.write("e" * 1_000_000 + "\n")
        sys.stderr.flush()
    if MODE == "exit_at_start":
        print("faulty: refusing to start", file=sys.stderr)
        sys.exit(3)
    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            continue  # a notification
        if method == "initialize":
            if MODE == "hang_init":
                time.sleep(3600)
            version = request["params"]["protocolVersion"]
            result(
                request,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {
                        "name": "faulty" * (200_000 if MODE == "chatty" else 1),
                        "version": "1.0",
                    },
                },
            )
        elif method == "tools/list":
            schema = SCHEMAS.get(MODE, SCHEMA)
            description = "Look a key up."
            if MODE == "huge_listing":
                description *= 100_000
                schema = {**SCHEMA, "description": "y" * 100_000}
            tool = {
                "name": "lookup",
                "description": description,
                "inputSchema": schema,
                "annotations": {"readOnlyHint": True},
            }
            result(request, {"tools": [tool]})
        elif method == "tools/call":
            if MODE == "die_on_call":
                sys.exit(4)
            if MODE == "hang_call":
                time.sleep(3600)
            if MODE == "megabytes":
                result(request, text("x" * 5_000_000))
            elif MODE == "flood":
                result(request, text("x" * 40_000_000))
            elif MODE == "image":
                image = {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
                result(request, {"content": [image], "isError": False})
            elif MODE == "tool_error":
                result(request, text("no such key", error=True))
            else:
                result(request, text("the answer is 42"))
        elif method == "ping":
            result(request, {})
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "error": {"code": -32601, "message": f"no method {method}"},
                }
            )


if __name__ == "__main__":
    main()
