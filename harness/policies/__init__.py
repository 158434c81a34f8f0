"""The loop's settings for small models: one module per hook, one registry, the presets.

A hook is an object with settings and methods the loop calls (:mod:`harness.policies.base`);
the registry (:mod:`harness.policies.registry`) lists them in the order the loop consults them;
the loop calls them through :mod:`harness.hooks`; presets and flags (:mod:`harness.presets`)
are derived from the registry. Adding a hook is one module
and one registry line.

No text here is taken from any task set: the worked example is about another folder and
another question (a test checks this against the task files).
"""

from harness.policies.base import Hook, Prompt, Said, Setting, TurnPlan, UnknownSetting

__all__ = ["Hook", "Prompt", "Said", "Setting", "TurnPlan", "UnknownSetting"]
