"""List prices: what a run would cost if every token were billed.

A local model is priced at one configurable list price (``Prices()``: $2.00 per million input
tokens, $12.00 per million output tokens), as "what this run would cost at list price". A
hosted model is priced at its provider's own list price where :data:`LIST_PRICES` knows it,
and its cost is unknown (never 0) where it does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Prices:
    input_per_million: float = 2.00
    output_per_million: float = 12.00

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million
        ) / 1_000_000


# Providers' list prices in USD per million tokens (input, output), standard tier, as they
# published them for these model families (OpenAI and Anthropic, 2025). A dated or longer id
# takes the price of the longest name it starts with ("gpt-4o-mini-2024-07-18": gpt-4o-mini).
LIST_PRICES: dict[str, Prices] = {
    "gpt-4o": Prices(2.50, 10.00),
    "gpt-4o-mini": Prices(0.15, 0.60),
    "gpt-4.1": Prices(2.00, 8.00),
    "gpt-4.1-mini": Prices(0.40, 1.60),
    "gpt-4.1-nano": Prices(0.10, 0.40),
    "gpt-5": Prices(1.25, 10.00),
    "gpt-5-mini": Prices(0.25, 2.00),
    "gpt-5-nano": Prices(0.05, 0.40),
    "o3": Prices(2.00, 8.00),
    "o3-mini": Prices(1.10, 4.40),
    "o4-mini": Prices(1.10, 4.40),
    "claude-3-5-haiku": Prices(0.80, 4.00),
    "claude-3-5-sonnet": Prices(3.00, 15.00),
    "claude-3-7-sonnet": Prices(3.00, 15.00),
    "claude-haiku-4-5": Prices(1.00, 5.00),
    "claude-sonnet-4": Prices(3.00, 15.00),
    "claude-sonnet-4-5": Prices(3.00, 15.00),
    "claude-opus-4": Prices(15.00, 75.00),
    "claude-opus-4-1": Prices(15.00, 75.00),
    "claude-opus-4-5": Prices(5.00, 25.00),
}
# What may follow a name of the table in an id that takes its price: a date or "latest"
# ("-2024-07-18", "-20250514", "-latest"); anything else is another model ("o3-pro",
# "claude-opus-4-6").
_VERSION = re.compile(r"-\d{8}|-\d{4}-\d{2}-\d{2}|-latest")


def list_price(model: str) -> tuple[str, Prices] | None:
    """The provider's list price of ``model`` (a vendor prefix, ``openai/``, set aside), by the
    longest name of the table it starts with, and that name; None where none fits."""
    name = model.rsplit("/", 1)[-1].lower()
    fits = [
        known
        for known in LIST_PRICES
        if name == known
        or (name.startswith(known) and _VERSION.fullmatch(name.removeprefix(known)) is not None)
    ]
    if not fits:
        return None
    known = max(fits, key=len)
    return known, LIST_PRICES[known]
