"""What a record of a τ² task keeps (registered by τ²'s environment as it enters the
registry, so a τ² record reads typed wherever the registry is loaded)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict

from evals.record import Data


class Tau2Data(Data):
    """One of τ²-bench's tasks (``evals.tau2.environment``): its domain and τ²'s own id, the
    tau2 package that ran it, and τ²'s evaluator's verdict: the reward (None: never judged,
    the run an error) and its parts as τ² writes them (``db_check``, ``communicate_checks``,
    ``env_assertions``, ``action_checks``, ``reward_breakdown``)."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["tau2"] = "tau2"
    domain: str
    task: str
    tau2_version: str | None = None
    reward: float | None = None
    reward_info: dict[str, Any] | None = None

    def verdicts(self) -> dict[str, float]:
        return {} if self.reward is None else {"tau2": self.reward}
