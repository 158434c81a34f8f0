"""The agent loop, its controls, the tool catalogue and the provider client."""

from harness.config import LoopConfig
from harness.errors import HarnessError, PathRefused, ProviderError, ToolError
from harness.loop import run_loop
from harness.prices import Prices
from harness.state import RunState, new_run
from harness.tools import Tool, ToolContext, default_tools
from harness.workspace import Workspace, create_workspace

__all__ = [
    "HarnessError",
    "LoopConfig",
    "PathRefused",
    "Prices",
    "ProviderError",
    "RunState",
    "Tool",
    "ToolContext",
    "ToolError",
    "Workspace",
    "create_workspace",
    "default_tools",
    "new_run",
    "run_loop",
]
