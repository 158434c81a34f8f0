"""The Messages shape on the server: conformance with the official anthropic client, the six
stop reasons, and what must be refused (each a 4xx in Anthropic's error shape)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest

from harness.tools import default_tools
from serve_local.backends.generation import call_policy
from serve_local.messages_request import parse_messages, to_chat
from serve_local.scenarios import PLAN_ANSWER
from tests.helpers import DANGLING_REF, REMOTE_REF
from tests.nesting_cases import messages_cases

QUESTION = "Which file mentions a timeout?"


def tools() -> list[dict[str, Any]]:
    out = []
    for tool in default_tools():
        function = tool.spec()["function"]
        out.append(
            {
                "name": function["name"],
                "description": function["description"],
                "input_schema": function["parameters"],
            }
        )
    return out


@pytest.fixture
def root(scripted_url: str) -> str:
    return scripted_url.removesuffix("/v1")


@pytest.fixture
def client(root: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=root, api_key="unused", max_retries=0)


def post(root: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{root}/v1/messages", json=body, timeout=10)


def request(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "scripted:plan",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": tools(),
    }
    return {**body, **overrides}


def use(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": args}
    return {"role": "assistant", "content": [block]}


def result(call_id: str, content: Any, **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}
    return {"role": "user", "content": [block]}


# The plan conversation after its two calls, in the Messages shape.
AFTER_CALLS: list[dict[str, Any]] = [
    {"role": "user", "content": QUESTION},
    use("c1", "list_files"),
    result("c1", "errors.log  120 bytes"),
    use("c2", "read_file", path="errors.log"),
    result("c2", [{"type": "text", "text": "worker 7 timed out"}]),
]


def test_official_client_gets_a_tool_use(client: anthropic.Anthropic) -> None:
    message = client.messages.create(**request())
    assert message.type == "message" and message.role == "assistant"
    assert message.stop_reason == "tool_use"
    (block,) = message.content
    assert block.type == "tool_use"
    assert (block.id, block.name, block.input) == ("c1", "list_files", {})
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0


def test_official_client_reads_tool_results_and_gets_end_turn(client: anthropic.Anthropic) -> None:
    message = client.messages.create(**request(messages=AFTER_CALLS, system="Be brief."))
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == PLAN_ANSWER  # type: ignore[union-attr]


def test_official_client_streams_a_tool_use(client: anthropic.Anthropic) -> None:
    with client.messages.stream(**request(model="scripted:oracle")) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert {"content_block_start", "content_block_stop", "message_delta"} <= set(events)
    assert final.stop_reason == "tool_use"
    assert [(b.type, getattr(b, "name", None)) for b in final.content] == [
        ("tool_use", "list_files")
    ]
    assert final.usage.output_tokens > 0


def test_stream_of_text_has_text_deltas(client: anthropic.Anthropic) -> None:
    with client.messages.stream(**request(messages=AFTER_CALLS)) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == PLAN_ANSWER
    assert final.stop_reason == "end_turn"


def test_usage_matches_the_chat_shape(root: str, scripted_url: str) -> None:
    """One conversation costs the same tokens whichever shape carries it."""
    chat = httpx.post(
        f"{scripted_url}/chat/completions",
        json={
            "model": "scripted:plan",
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": [t.spec() for t in default_tools()],
        },
        timeout=10,
    ).json()["usage"]
    usage = post(root, request()).json()["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (
        chat["prompt_tokens"],
        chat["completion_tokens"],
    )


@pytest.mark.parametrize(
    ("model", "messages", "reason"),
    [
        ("scripted:plan", None, "tool_use"),
        ("scripted:plan", AFTER_CALLS, "end_turn"),
        ("scripted:plan+trunc@2", AFTER_CALLS, "max_tokens"),
        ("scripted:plan+stopseq@2", AFTER_CALLS, "stop_sequence"),
        ("scripted:plan+pause@2", AFTER_CALLS, "pause_turn"),
        ("scripted:plan+refuse@2", AFTER_CALLS, "refusal"),
        ("scripted:plan+filter@2", AFTER_CALLS, "refusal"),
    ],
)
def test_each_stop_reason_on_demand(
    client: anthropic.Anthropic, model: str, messages: Any, reason: str
) -> None:
    extra = {"messages": messages} if messages else {}
    message = client.messages.create(**request(model=model, **extra))
    assert message.stop_reason == reason


def test_stop_sequence_names_the_sequence_asked_for(client: anthropic.Anthropic) -> None:
    message = client.messages.create(**request(messages=AFTER_CALLS, stop_sequences=[" timed"]))
    assert message.stop_reason == "stop_sequence"
    assert message.stop_sequence == " timed"
    assert message.content[0].text == PLAN_ANSWER.split(" timed")[0]  # type: ignore[union-attr]


def test_paused_turn_sent_back_unchanged_is_continued(client: anthropic.Anthropic) -> None:
    paused = client.messages.create(**request(model="scripted:plan+pause@2", messages=AFTER_CALLS))
    assert paused.stop_reason == "pause_turn"
    head = paused.content[0].text  # type: ignore[union-attr]
    assert head and PLAN_ANSWER.startswith(head) and head != PLAN_ANSWER
    again = [*AFTER_CALLS, {"role": "assistant", "content": [{"type": "text", "text": head}]}]
    rest = client.messages.create(**request(model="scripted:plan+pause@2", messages=again))
    assert rest.stop_reason == "end_turn"
    assert head + rest.content[0].text == PLAN_ANSWER  # type: ignore[union-attr]


def test_paused_call_turn_continues_with_the_call(client: anthropic.Anthropic) -> None:
    paused = client.messages.create(**request(model="scripted:plan+pause@0"))
    assert paused.stop_reason == "pause_turn" and paused.content == []
    again = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": []}]
    rest = client.messages.create(**request(model="scripted:plan+pause@0", messages=again))
    assert rest.stop_reason == "tool_use"
    assert [getattr(b, "name", None) for b in rest.content] == ["list_files"]


ALL = {"list_files", "read_file", "delete_file", "scan_archive"}


@pytest.mark.parametrize(
    ("choice", "tools_allowed", "parallel"),
    [
        (None, ALL, True),
        ({"type": "auto"}, ALL, True),
        ({"type": "any", "disable_parallel_tool_use": True}, ALL, False),
        ({"type": "tool", "name": "read_file"}, {"read_file"}, True),
        ({"type": "none"}, None, None),
    ],
)
def test_tool_choice_maps_onto_the_call_policy_of_the_chat_route(
    choice: dict[str, Any] | None, tools_allowed: set[str] | None, parallel: bool | None
) -> None:
    """The backends constrain calls by ``call_policy``: the same policy in both shapes."""
    body = request(tool_choice=choice) if choice else request()
    policy = call_policy(to_chat(parse_messages(json.dumps(body).encode())))
    if tools_allowed is None:
        assert policy is None
        return
    assert policy is not None
    assert set(policy.allowed()) == tools_allowed
    assert policy.parallel is parallel
    if choice and choice["type"] == "any":
        assert policy.choice == "required"


def test_is_error_reaches_the_model_in_words(root: str) -> None:
    failed = [
        {"role": "user", "content": "Read timeout.log"},
        use("c1", "read_file", path="timeout.log"),
        result("c1", "no such file. Call list_files", is_error=True),
    ]
    body = post(root, request(model="scripted:recover", messages=failed)).json()
    assert body["stop_reason"] == "tool_use"  # recover read the hint and lists the files
    plain = [
        *failed[:2],
        {**failed[2], "content": [{**failed[2]["content"][0], "is_error": False}]},
    ]
    assert post(root, request(model="scripted:recover", messages=plain)).status_code == 200


def _error(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
    return response.status_code, body["error"]["type"], body["error"]["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"max_tokens": None}, "max_tokens: Field required"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"messages": []}, "at least one message"),
        ({"tool_choice": {"type": "tool", "name": "drop_database"}}, "drop_database"),
        ({"tool_choice": {"type": "any"}, "tools": None}, "offers no tools"),
        ({"tool_choice": {"type": "sometimes"}}, "tool_choice"),
        ({"messages": [{"role": "system", "content": "x"}]}, "top-level 'system'"),
        ({"tools": [{"name": "t", "input_schema": {"type": 7}}]}, "input_schema"),
        ({"tools": [{"name": "t"}]}, "tools.0.input_schema: Field required"),
        (
            {"tools": [{"name": "t", "input_schema": {"type": "object", "$ref": "#"}}]},
            "recurse forever",
        ),
        (
            {"tools": [{"name": "t", "input_schema": REMOTE_REF}]},
            "'https://example.com/path.json' (at properties/path) points outside the schema",
        ),
        (
            {"tools": [{"name": "t", "input_schema": DANGLING_REF}]},
            "names nothing in the schema",
        ),
        (
            {"tools": [{"name": "t", "input_schema": {"type": "array"}}]},
            "tools.0.input_schema: not an object schema",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
            "messages.0.content",
        ),
        (
            {
                "messages": [
                    *AFTER_CALLS[:2],
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c9"}]},
                ]
            },
            "unexpected tool_use_id found in tool_result blocks: 'c9'",
        ),
        (
            {"messages": [*AFTER_CALLS[:2], {"role": "user", "content": "no result"}]},
            "without tool_result blocks",
        ),
        (
            {"messages": [{"role": "user", "content": [AFTER_CALLS[1]["content"][0]]}]},
            "tool_use block belongs in an assistant message",
        ),
        (
            {"messages": [*AFTER_CALLS[:3], AFTER_CALLS[1], AFTER_CALLS[2]]},
            "tool_use ids must be unique; 'c1' is repeated",
        ),
        (
            {
                "messages": [
                    AFTER_CALLS[0],
                    {"role": "assistant", "content": [AFTER_CALLS[2]["content"][0]]},
                ]
            },
            "tool_result block belongs in a user message",
        ),
    ],
)
def test_bad_requests_are_4xx_in_anthropic_shape(
    root: str, body: dict[str, Any], words: str
) -> None:
    sent = {k: v for k, v in request(**body).items() if v is not None}
    status, kind, message = _error(post(root, sent))
    assert (status, kind) == (400, "invalid_request_error")
    assert words in message


@pytest.mark.parametrize(
    ("body", "words"),
    [(body, words) for _, body, words in messages_cases("scripted:plan")],
    ids=[case for case, _, _ in messages_cases("scripted:plan")],
)
def test_bodies_nested_past_a_limit_are_4xx_in_anthropic_shape(
    root: str, body: Any, words: str
) -> None:
    kwargs: dict[str, Any] = (
        {"content": body, "headers": JSON} if isinstance(body, str) else {"json": body}
    )
    status, kind, message = _error(httpx.post(f"{root}/v1/messages", timeout=30, **kwargs))
    assert (status, kind) == (400, "invalid_request_error")
    assert words in message


JSON = {"Content-Type": "application/json"}


def test_body_that_is_not_json_is_a_400(root: str) -> None:
    response = httpx.post(f"{root}/v1/messages", content=b"{nope", headers=JSON, timeout=10)
    assert _error(response)[:2] == (400, "invalid_request_error")


def test_official_client_raises_each_error(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as bad:
        client.messages.create(
            model="scripted:plan",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            tool_choice={"type": "tool", "name": "missing"},
            tools=tools(),  # type: ignore[arg-type]
        )
    assert bad.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.messages.create(**request(model="scripted:missing"))
    assert missing.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(**request(model="scripted:plan+429x1@0"))
    with pytest.raises(anthropic.AuthenticationError):
        client.messages.create(**request(model="scripted:plan+401x1@0"))
    with pytest.raises(anthropic.InternalServerError) as server:
        client.messages.create(**request(model="scripted:plan+500x1@0"))
    assert server.value.body["error"]["type"] == "api_error"  # type: ignore[index]


def test_official_client_retries_a_429_and_then_succeeds(root: str) -> None:
    patient = anthropic.Anthropic(base_url=root, api_key="unused", max_retries=2)
    message = patient.messages.create(**request(model="scripted:plan+429x1@0"))
    assert message.stop_reason == "tool_use"
