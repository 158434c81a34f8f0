"""The flags of the model servers a command starts itself, one model at a time (the sweep, the
leaderboard): declared once here."""

from __future__ import annotations

from typing import Any


def add_serving_flags(parser: Any, starter: str) -> None:
    """``--backend``, ``--threads``, ``--tool-grammar`` and ``--slots`` for the servers
    ``starter`` starts (used when no ``--base-url`` names a running server)."""
    parser.add_argument("--backend", default="llama", help=f"for the servers {starter} starts")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--tool-grammar", default="lazy")
    parser.add_argument(
        "--slots",
        type=int,
        default=1,
        metavar="N",
        help="requests each server started here decodes together (llama backend; the eval "
        "keeps that many task runs in flight)",
    )
