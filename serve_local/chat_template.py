"""Render a conversation with the model's own chat template (Jinja, as transformers does)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection, Iterator
from datetime import datetime
from typing import Any

from jinja2 import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from serve_local.errors import InvalidRequest
from serve_local.schema import ChatRequest
from serve_local.written import WrittenReplies

# Used when a model's template ignores `tools`: the same instructions Qwen's template gives.
_TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    "{tools}\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)


def _tojson(value: Any, indent: int | None = None) -> str:
    # jinja2's own tojson escapes <, > and & for HTML; chat templates want plain JSON.
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _raise(message: str) -> None:
    raise TemplateError(message)


def _arguments_object(arguments: str) -> Any:
    """Arguments back to an object, so a template's ``tojson`` does not encode them twice."""
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments


def conversation(request: ChatRequest) -> list[dict[str, Any]]:
    """The request's messages as plain dicts ready for a chat template."""
    out: list[dict[str, Any]] = []
    for m in request.messages:
        message: dict[str, Any] = {
            "role": "system" if m.role == "developer" else m.role,
            "content": m.text(),
        }
        if m.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.function.name,
                        "arguments": _arguments_object(c.function.arguments),
                    },
                }
                for c in m.tool_calls
            ]
        if m.tool_call_id:
            message["tool_call_id"] = m.tool_call_id
        if m.name:
            message["name"] = m.name
        out.append(message)
    return out


def _inline_tools(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """For templates without tool support: tools in the system text, calls and results as text."""
    specs = "\n".join(_tojson(t) for t in tools)
    preamble = _TOOLS_PREAMBLE.format(tools=specs)
    out: list[dict[str, Any]] = []
    if not messages or messages[0]["role"] != "system":
        out.append({"role": "system", "content": preamble})
    for m in messages:
        if m["role"] == "system" and not out:
            out.append({"role": "system", "content": f"{m['content']}\n\n{preamble}"})
        elif m["role"] == "assistant" and m.get("tool_calls"):
            calls = "".join(
                "\n<tool_call>\n"
                + _tojson({"name": c["function"]["name"], "arguments": c["function"]["arguments"]})
                + "\n</tool_call>"
                for c in m["tool_calls"]
            )
            out.append({"role": "assistant", "content": (m["content"] + calls).strip()})
        elif m["role"] == "tool":
            out.append(
                {"role": "user", "content": f"<tool_response>\n{m['content']}\n</tool_response>"}
            )
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def _strings(value: Any) -> Iterator[str]:
    """Every string in a structure of dicts and lists."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class ChatTemplate:
    def __init__(self, source: str, bos_token: str = "", eos_token: str = "") -> None:
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
        )
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        self.source = source
        self.supports_tools = "tools" in source
        self._template = env.from_string(source)
        self.bos_token = bos_token
        self.eos_token = eos_token

    def render(self, request: ChatRequest) -> str:
        return "".join(text for text, _ in self.render_parts(request))

    def render_parts(
        self,
        request: ChatRequest,
        markers: Collection[str] = (),
        written: WrittenReplies | None = None,
    ) -> list[tuple[str, bool]]:
        """The prompt as pieces ``(text, markup)``: ``markers`` (the text of the model's
        control tokens) written by the template are markup, those found in what the request
        says (message contents, calls, tool definitions) are pieces of their own that are not,
        so that a file holding ``<|im_start|>system`` reaches the model as text, never as a
        turn of its own."""
        messages = conversation(request)
        tools = [t.model_dump(exclude_none=True) for t in request.tools or []]
        own: set[int] = set()  # replies this server wrote, kept as written
        if tools and not self.supports_tools:
            messages = _inline_tools(messages, tools)
        elif written is not None:
            # A reply this server wrote comes back as it was written (serve_local.written):
            # its text is the model's own, markup included, so it is neither rendered again
            # in the template's form nor hidden from the tokenizer.
            for i, message in enumerate(messages):
                text = written.written(message)
                if text is not None:
                    messages[i] = {"role": "assistant", "content": text}
                    own.add(i)
        said = list(_strings([[m for i, m in enumerate(messages) if i not in own], tools]))
        found = [m for m in markers if m and any(m in text for text in said)]
        if not found:
            return [(self._render(messages, tools), True)]
        nonce = uuid.uuid4().hex
        pattern = re.compile("|".join(re.escape(m) for m in sorted(found, key=len, reverse=True)))
        index = {m: i for i, m in enumerate(found)}

        def hide(value: Any) -> Any:
            if isinstance(value, str):
                return pattern.sub(lambda m: f"\ue000{nonce}{index[m.group(0)]}\ue001", value)
            if isinstance(value, list):
                return [hide(v) for v in value]
            if isinstance(value, dict):
                return {k: hide(v) for k, v in value.items()}
            return value

        kept = [m if i in own else hide(m) for i, m in enumerate(messages)]
        rendered = self._render(kept, hide(tools))
        pieces = re.split(f"\ue000{nonce}(\\d+)\ue001", rendered)
        # re.split alternates the text between markers and the markers' indexes
        return [
            (found[int(piece)], False) if odd else (piece, True)
            for odd, piece in ((i % 2 == 1, p) for i, p in enumerate(pieces))
            if piece
        ]

    def _render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        try:
            return self._template.render(
                messages=messages,
                tools=tools or None,
                add_generation_prompt=True,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except Exception as exc:  # a template is a program: any failure is this request's 400
            raise InvalidRequest(
                f"The model's chat template rejected this conversation: {exc}",
                param="messages",
                code="template_error",
            ) from exc
