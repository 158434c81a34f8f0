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
