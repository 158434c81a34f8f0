"""A loop setting another package adds: ``--shout on`` asks for the answer in capitals. Its
module imports ``harness.policies.base`` only: the loop's registry loads it while it is built."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Prompt, Setting

SHOUT_ON: Setting[bool] = Setting("shout", False, "ask for the answer in capitals", "bool")
SHOUTING = " Answer in capital letters."


class Shout(Hook):
    name = "shout"
    settings = (SHOUT_ON,)

    def prompt(self, config: Config, prompt: Prompt) -> None:
        if SHOUT_ON.of(config):
            prompt.rules.append(SHOUTING)


SHOUT = Shout()

# A preset another package adds (``--preset shouting``): a name, what it is, and its settings
# (those it leaves out keep their defaults), as harness/presets.json writes one.
PRESET = {
    "name": "shouting",
    "description": "no-helpers, with every answer asked for in capital letters.",
    "settings": {"shout": True},
}
TAKEN = {"name": "all-helps", "settings": {}}  # a name presets.json has: left out
