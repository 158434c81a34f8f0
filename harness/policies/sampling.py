"""What every request asks of the sampler: a token cap per turn and the penalties."""

from __future__ import annotations

from typing import Any

from harness.policies.base import Config, Hook, Setting, TurnPlan
from harness.state import RunState

MAX_TOKENS: Setting[int | None] = Setting(
    "max_tokens_per_turn",
    None,
    "the most tokens one reply may take",
    "int",
    optional=True,
    doc="sent as `max_tokens`",
)
REPETITION: Setting[float | None] = Setting(
    "repetition_penalty",
    None,
    "sent as repetition_penalty",
    "float",
    optional=True,
    doc=(
        "sent with every request as `repetition_penalty`; `serve_local` passes it to llama.cpp's "
        "sampler (as `repeat_penalty`, which it accepts too) and to transformers' `generate`"
    ),
)
FREQUENCY: Setting[float | None] = Setting(
    "frequency_penalty",
    None,
    "sent as frequency_penalty",
    "float",
    optional=True,
    doc="sent with every request; `serve_local` passes it to llama.cpp's sampler",
)
PRESENCE: Setting[float | None] = Setting(
    "presence_penalty",
    None,
    "sent as presence_penalty",
    "float",
    optional=True,
    doc="sent with every request; `serve_local` passes it to llama.cpp's sampler",
)
# The request field each setting fills.
FIELDS: tuple[tuple[Setting[Any], str], ...] = (
    (MAX_TOKENS, "max_tokens"),
    (REPETITION, "repetition_penalty"),
    (FREQUENCY, "frequency_penalty"),
    (PRESENCE, "presence_penalty"),
)


class Sampling(Hook):
    name = "sampling"
    settings = tuple(setting for setting, _ in FIELDS)

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        for setting, wire in FIELDS:
            if (value := setting.of(config)) is not None:
                plan.options[wire] = value


HOOK = Sampling()
