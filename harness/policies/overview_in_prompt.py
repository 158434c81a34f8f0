"""``overview_in_prompt``: the system prompt shows what a first look at the run's material would
show (for SQL tasks, the tables and columns as ``describe`` lists them), so the first
query needs no look and the prefix every turn shares holds the schema.

The overview comes from the task's environment (``harness.setup.Setup.overview``); where it
gives none (a folder of files), the setting adds nothing.
"""

from __future__ import annotations

from harness.policies.base import Config, Hook, Prompt, Setting

OVERVIEW_ON: Setting[bool] = Setting(
    "overview_in_prompt",
    False,
    "the system prompt shows what the task works on, where its source gives an overview (the "
    "sql tasks: every table and column, as describe lists them)",
    "bool",
    doc=(
        "the system prompt shows what the task works on, where its source gives an overview: for "
        "the database's tasks every table and column as `describe` lists them (the "
        "`analyst-schema` preset); a folder of files gives none, and the prompt stays as it is"
    ),
)


class Overview(Hook):
    name = "overview_in_prompt"
    settings = (OVERVIEW_ON,)

    def prompt(self, config: Config, prompt: Prompt) -> None:
        overview = prompt.setup and prompt.setup.overview
        if OVERVIEW_ON.of(config) and overview:
            prompt.rules.append("\n\n" + overview)


HOOK = Overview()
