"""``example``: one worked example in the system prompt, from another folder and another
question (a test checks that no task set holds its text)."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Prompt, Setting
from harness.policies.submit import SUBMIT_ON

# A different folder (recipes) and a different question; the calls are written as the model
# would send them.
EXAMPLE = (
    '\n\nAn example from another folder. Asked "Which recipe needs basil?", you call '
    "list_files {{}} and see soup.md, pasta.md and cake.md; you call read_file "
    '{{"path": "pasta.md"}} and read that it uses fresh basil; then you {finish}. '
    "Never guess a file name you have not seen, and never answer before you have read what "
    "the answer depends on."
)
EXAMPLE_ANSWER = "answer: pasta.md needs basil"
EXAMPLE_SUBMIT = 'call submit {"answer": "pasta.md needs basil."}'

EXAMPLE_ON: Setting[bool] = Setting(
    "example",
    False,
    "worked example in prompt",
    "bool",
    doc="one worked example in the system prompt, about another folder and another question",
)


class Example(Hook):
    name = "example"
    settings = (EXAMPLE_ON,)

    def prompt(self, config: Config, prompt: Prompt) -> None:
        if EXAMPLE_ON.of(config):
            finish = EXAMPLE_SUBMIT if SUBMIT_ON.of(config) else EXAMPLE_ANSWER
            prompt.examples.append(EXAMPLE.format(finish=finish))


HOOK = Example()
