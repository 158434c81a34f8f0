"""What a task runs on: a workspace of files, a database, MCP servers' tools, one of τ²'s
domains, or an environment another package adds (``loopbench.environments``). This package is
the protocol (``base.Environment``): which tasks it holds, what it opens once per eval, the
tools and system-prompt intro a task runs with, the fields it adds to the task's record and to
its task file, its task sources and figures, the preset its tasks run under by default, how a
workflow gathers its evidence, and the scripted reading of everything a task could look at
(what the scorer's strategies answer from). Each built-in environment is a package of its own
(``evals.workspace``, ``evals.database``, ``evals.mcp``, ``evals.tau2``), and ``evals.registry``
lists them, one line each. This package imports only the protocol, so an environment of another
package that imports ``evals.environments.base`` loads without the registry."""

from evals.environments.base import Dialogue, Environment, Opened, Reading

__all__ = ["Dialogue", "Environment", "Opened", "Reading"]
