"""What other packages use of the server, in one module: the shapes a call takes when a model
writes it as text (``callshape``), starting a server process on a free port and waiting for
it (``process``), the packaged models' names (``catalogue``), and the scripted provider's
reply builders (``scenarios``). Besides it, the backends' registry and their options
(``serve_local.backends.registry`` and ``options``: what a plugin declares its backend with)
and the daemon (``serve_local.daemon``: ``loopbench serve`` and ``stop``) are public; the rest
of the package is the server's own, and the eval core does not import it (``pyproject.toml``,
contract ``public``)."""

from __future__ import annotations

from serve_local.callshape import CALL_HEAD, call_spans
from serve_local.catalogue import DEFAULT_NAME, LADDER
from serve_local.errors import StartupError
from serve_local.process import free_port, serve_command, server_process
from serve_local.scenarios import Reply, Transcript, call, text

__all__ = [
    "CALL_HEAD",
    "DEFAULT_NAME",
    "LADDER",
    "Reply",
    "StartupError",
    "Transcript",
    "call",
    "call_spans",
    "free_port",
    "serve_command",
    "server_process",
    "text",
]
