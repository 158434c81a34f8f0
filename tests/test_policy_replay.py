"""Each preset makes the requests it made before: committed transcripts replayed through the loop
(``tests.replay``) against the golden requests in ``tests/data/policy_requests.json``."""

from __future__ import annotations

import asyncio
import json

from tests import replay

# What to do when a change means to alter what a preset asks (docs/development.md).
REGENERATE = (
    "if the change means to (a new preset, a setting's new default), regenerate the golden file "
    "with `.venv/bin/python -m tests.replay` and commit its diff; otherwise the change altered "
    "behaviour it should not have"
)


def test_every_committed_transcript_replays_to_the_same_requests() -> None:
    golden = json.loads(replay.GOLDEN.read_text(encoding="utf-8"))
    cases = replay.cases()
    assert {key for key, *_ in cases} == set(golden), f"the committed runs changed: {REGENERATE}"
    presets = {key.rsplit(":", 1)[1] for key in golden} - {"own"}
    assert presets == set(replay.presets()), f"the presets changed: {REGENERATE}"
    differ = []
    for key, record, state, task, settings in cases:
        requests = asyncio.run(replay.replay_case(record, state, task, settings))
        if requests != golden[key]:
            differ.append((key, golden[key], requests))
    shown = "\n".join(f"{k}\n  was {g}\n  now {n}" for k, g, n in differ[:3])
    assert not differ, (
        f"{len(differ)} of {len(cases)} replays make other requests ({REGENERATE}):\n{shown}"
    )
    # The replays reach every request a policy adds: each kind of message the harness says.
    said = {line.split(" ", 3)[3] for requests in golden.values() for line in requests}
    assert any(s.startswith("user: Your last reply was empt") for s in said)
    assert any(s.startswith("user: Some files list_files") for s in said)
    assert any(s.startswith("user: You have not read any") for s in said)
    assert any(s.startswith("user: You have reached the") for s in said)
