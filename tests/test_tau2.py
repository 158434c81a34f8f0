"""tau2-bench behind its pipe: its own package, in its own virtualenv, answers for its domains
and its metrics."""

from __future__ import annotations

import asyncio
import random

import pytest

from evals.record import RunRecord
from evals.report.stats import pass_hat_k
from evals.tau2.bridge import Tau2, Tau2Unavailable, tau2_python
from tests.helpers import run_record

needs_tau2 = pytest.mark.skipif(
    not tau2_python().exists(),
    reason=f"tau2's virtualenv is absent ({tau2_python()}): `make tau2-venv` creates it "
    "(`make test` does so first)",
)


def _records(counts: list[tuple[int, int]]) -> list[RunRecord]:
    """Task i tried n times, right c of them."""
    return [
        run_record(task_id=f"t{i}", epoch=e + 1, correct=e < c, task_set="t")
        for i, (n, c) in enumerate(counts)
        for e in range(n)
    ]


@needs_tau2
def test_pass_hat_k_is_tau2s_own_on_the_same_counts() -> None:
    rng = random.Random(7)
    trials = 4
    counts = [(trials, rng.randint(0, trials)) for _ in range(40)]

    async def theirs() -> list[float | None]:
        async with Tau2() as tau2:
            return [await tau2.pass_hat_k(counts, k) for k in range(1, trials + 1)]

    expected = asyncio.run(theirs())
    ours = [pass_hat_k(_records(counts), k) for k in range(1, trials + 1)]
    assert ours == pytest.approx(expected, abs=1e-12)
    assert ours[0] > ours[-1] > 0  # it falls with k, and some task is right every time


@needs_tau2
def test_the_domains_tools_come_from_tau2s_package() -> None:
    async def listed() -> dict[str, tuple[int, int]]:
        async with Tau2() as tau2:
            assert tau2.version == "26.3"
            found = {}
            for domain in ("airline", "retail", "telecom"):
                tools = await tau2.tools(domain)
                found[domain] = (len(tools["agent"]), len(tools["user"]))
            return found

    # The user holds the phone's tools in telecom only (dual control).
    assert asyncio.run(listed()) == {"airline": (14, 0), "retail": (15, 0), "telecom": (13, 30)}


def test_a_missing_virtualenv_names_the_command_that_makes_it(tmp_path: object) -> None:
    from pathlib import Path

    async def start() -> None:
        async with Tau2(Path("/nonexistent/python")):
            pass

    with pytest.raises(Tau2Unavailable, match="make tau2-venv"):
        asyncio.run(start())
