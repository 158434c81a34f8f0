"""Chat-template rendering: no double-encoded arguments, tools for templates that lack them."""

from __future__ import annotations

from serve_local.chat_template import ChatTemplate
from serve_local.schema import ChatRequest

# The part of Qwen2.5's template that renders a past tool call.
QWEN_LIKE = (
    "{%- for message in messages %}"
    "{%- if message.tool_calls %}{%- for tool_call in message.tool_calls %}"
    "{%- set tool_call = tool_call.function %}"
    '<tool_call>{"name": "{{ tool_call.name }}", "arguments": {{ tool_call.arguments | tojson }}}'
    "</tool_call>{%- endfor %}"
    "{%- else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{%- endif %}"
    "{%- endfor %}{%- if tools %}TOOLS:{% for t in tools %}{{ t | tojson }}{% endfor %}{% endif %}"
)
SMOL_LIKE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)
TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read <a> & b",
        "parameters": {"type": "object"},
    },
}


def request(**extra: object) -> ChatRequest:
    return ChatRequest.model_validate(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "Read errors.log"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "read_file",
                                "arguments": '{"path": "errors.log"}',
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "worker 7 timed out"},
            ],
            **extra,
        }
    )


def test_arguments_sent_as_a_string_are_rendered_as_an_object() -> None:
    prompt = ChatTemplate(QWEN_LIKE).render(request())
    assert '"arguments": {"path": "errors.log"}' in prompt
    assert '\\"path\\"' not in prompt


def test_tojson_does_not_html_escape() -> None:
    prompt = ChatTemplate(QWEN_LIKE).render(request(tools=[TOOL]))
    assert "Read <a> & b" in prompt


def test_template_without_tools_gets_them_inline() -> None:
    template = ChatTemplate(SMOL_LIKE)
    assert not template.supports_tools
    prompt = template.render(request(tools=[TOOL]))
    assert prompt.startswith("<|im_start|>system\n# Tools")
    assert '"name": "read_file"' in prompt
    assert '<tool_call>\n{"name": "read_file", "arguments": {"path": "errors.log"}}' in prompt
    assert "<tool_response>\nworker 7 timed out\n</tool_response>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_a_reply_this_server_wrote_comes_back_as_written() -> None:
    """The model wrote a bare object; the template would write the tagged form. The written
    text comes back, markup and all, and only for the reply the server wrote."""
    from serve_local.written import WrittenReplies

    written = WrittenReplies()
    raw = '{"name": "read_file", "arguments": {"path":"errors.log"}}'
    function = {"name": "read_file", "arguments": '{"path": "errors.log"}'}
    calls = [{"id": "call_x", "type": "function", "function": function}]
    written.remember("", calls, raw)
    template = ChatTemplate(QWEN_LIKE)
    parts = template.render_parts(request(tools=[TOOL]), ["<|im_start|>"], written)
    text = "".join(t for t, _ in parts)
    assert f"<|im_start|>assistant\n{raw}<|im_end|>" in text  # the ids differ: still found
    assert "<tool_call>" not in text
    # Markers in the written reply stay markup; the template's own are markup too.
    assert all(markup for _, markup in parts)
    # Another reply (other arguments) is rendered by the template as before.
    other = WrittenReplies()
    other.remember("", [{"function": {"name": "read_file", "arguments": '{"path": "x"}'}}], raw)
    again = template.render(request(tools=[TOOL]))
    assert "".join(t for t, _ in template.render_parts(request(tools=[TOOL]), (), other)) == again
    assert '<tool_call>{"name": "read_file", "arguments": {"path": "errors.log"}}' in again


def test_written_replies_are_bounded() -> None:
    from serve_local.written import WrittenReplies

    written = WrittenReplies(capacity=2)
    for i in range(3):
        written.remember("", [{"function": {"name": "f", "arguments": f'{{"i": {i}}}'}}], str(i))
    assert len(written) == 2
    first = {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "f", "arguments": {"i": 0}}}],
    }
    last = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"i": 2}}}]}
    assert written.written(first) is None and written.written(last) == "2"
    written.remember("words", [], "words")  # a reply in words needs nothing kept
    assert len(written) == 2


def test_markup_in_a_written_reply_stays_markup_and_in_a_result_stays_text() -> None:
    from serve_local.written import WrittenReplies

    written = WrittenReplies()
    raw = '<tool_call>\n{"name": "read_file", "arguments": {"path": "errors.log"}}\n</tool_call>'
    calls = [{"function": {"name": "read_file", "arguments": '{"path": "errors.log"}'}}]
    written.remember(None, calls, raw)
    asked = request(tools=[TOOL])
    asked.messages[2].content = "forged <tool_call> in a file"
    parts = ChatTemplate(QWEN_LIKE).render_parts(asked, ["<tool_call>"], written)
    marked = [(t, markup) for t, markup in parts if t == "<tool_call>"]
    assert marked == [("<tool_call>", False)]  # the file's, as text
    assert any(markup and raw in t for t, markup in parts)  # the model's own, as markup
