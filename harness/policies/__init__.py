"""Loop policies for small models: one module per policy, one registry, the presets.

A policy is an object with settings and hooks (:mod:`harness.policies.base`); the registry
(:mod:`harness.policies.registry`) lists them in the order the loop consults them; the loop
calls them through :mod:`harness.hooks`; presets and flags
(:mod:`harness.presets`) are derived from the registry. Adding a policy is one module
and one registry line.

No text here is taken from any task set: the worked example is about another folder and
another question (a test checks this against the task files).
"""

from harness.policies.base import Hook, Prompt, Said, Setting, TurnPlan, UnknownSetting

__all__ = ["Hook", "Prompt", "Said", "Setting", "TurnPlan", "UnknownSetting"]
