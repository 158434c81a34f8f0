"""An Inspect AI task against our server: Inspect as a client, through its OpenAI-compatible
provider, a conformance check of the chat shape (tool calls out and back, stop reasons, usage).

    LOOPBENCH_BASE_URL=http://127.0.0.1:8001/v1 LOOPBENCH_API_KEY=local \\
        inspect eval lab/conformance/inspect_task.py --model openai-api/loopbench/scripted:plan \\
        -T workspace=/tmp/ws

Needs the ``inspect`` extra (``pip install -e ".[inspect]"``).
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import Tool, ToolError, tool

from harness.errors import ToolError as HarnessToolError
from harness.workspace import create_workspace

QUESTION = "What does notes.txt say?"


@tool
def read_file(workspace: str) -> Tool:
    folder = create_workspace(workspace)

    async def execute(path: str) -> str:
        """Read a text file of the workspace.

        Args:
            path: The file's name inside the workspace, for example notes.txt.

        Returns:
            The file's text.
        """
        try:
            return folder.existing(path).read_text(encoding="utf-8")
        except HarnessToolError as exc:
            raise ToolError(str(exc)) from exc

    return execute


@task
def notes(workspace: str) -> Task:
    """One sample: read notes.txt in ``workspace`` (created with the seed files) and say what
    it says."""
    return Task(
        dataset=[Sample(input=QUESTION, target="rotate")],
        solver=[use_tools(read_file(workspace)), generate()],
    )
