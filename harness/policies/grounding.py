"""``grounding``: the system prompt asks for every file an answer depends on to be opened, and
for the answer to say only what the tool results say."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Prompt, Setting

GROUNDING = (
    " Before you answer, open every file your answer depends on; if the question concerns "
    "several files, open each of them, one call per file. Answer only with what the tool "
    "results say, and name the file each fact came from. Never guess a file name: use the "
    "names list_files gives."
)

GROUNDING_ON: Setting[bool] = Setting(
    "grounding",
    False,
    "the system prompt asks to open every file the answer depends on and to answer only from "
    "tool results",
    "bool",
    doc=(
        "the system prompt asks to open every file the answer depends on, one call per file, and to"
        " answer only from tool results, never guessing a file name"
    ),
)


class Grounding(Hook):
    name = "grounding"
    settings = (GROUNDING_ON,)

    def prompt(self, config: Config, prompt: Prompt) -> None:
        if GROUNDING_ON.of(config):
            prompt.rules.append(GROUNDING)


HOOK = Grounding()
