"""make bench's ladder part: one packaged model on both servers, figures each server reports."""

from __future__ import annotations

import pytest

from lab.studies.serving import ladder
from lab.studies.serving.suite import PARTS
from serve_local import llama_server

pytestmark = pytest.mark.skipif(
    not llama_server.binary().exists(),
    reason="llama-server is not built: `make peer-llama-server` (make test builds it)",
)


def test_a_packaged_model_is_measured_on_both_servers() -> None:
    lines: list[str] = []
    figures = ladder.measure("smollm2-135m-instruct", lines.append)
    for who in ladder.SERVERS:
        got = figures[who]
        assert got["ready_s"] > 0 and got["peak_rss_mb"] and got["peak_rss_mb"] > 50
        assert got["generated_ms_per_token"] and got["prompt_ms_per_token"]
        assert got["completion_tokens"] > 0
    assert "smollm2-135m-instruct" in lines[0]
    rendered = "\n".join(
        ladder.render({"models": {"smollm2-135m-instruct": {"parameters": "135M", **figures}},
                       "requests": 3, "max_tokens": 64, "threads": 2})
    )  # fmt: skip
    assert "| smollm2-135m-instruct | 135M |" in rendered
    assert "ladder" in PARTS
