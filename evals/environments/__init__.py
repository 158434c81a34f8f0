"""What a task runs on: a workspace of files, a database, MCP servers' tools, one of τ²'s
domains, or an environment another package adds (``loopbench.environments``). Each is one
module with one object (``base.Environment``): which tasks it holds, what it opens once per
eval, the tools and system-prompt intro a task runs with, the fields it adds to the task's
record and to its task file, the preset its tasks run under by default, how a workflow gathers
its evidence, and the scripted reading of everything a task could look at (what the scorer's
strategies answer from). ``registry.py`` lists them, one line each; import what it finds from
there. This package imports only the protocol (``base``), so an environment of another package
that imports ``evals.environments.base`` loads without the registry."""

from evals.environments.base import Dialogue, Environment, Opened, Reading

__all__ = ["Dialogue", "Environment", "Opened", "Reading"]
