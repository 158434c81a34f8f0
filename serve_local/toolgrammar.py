"""Constrained decoding of tool calls: a grammar built from the offered tools (llguidance).

A call is exactly one offered tool's name with arguments valid under that tool's JSON Schema,
in one of the forms this model family writes: Qwen's ``<tool_call>`` block, a bare JSON object,
or a fenced ``json`` block. The grammar is a Lark grammar embedding each tool's schema with
``%json``; llguidance turns it into a token mask per step over the model's own vocabulary.

When it applies (``tool_choice``):

- ``"auto"``: lazily. The model writes freely until its reply starts a call: the tag anywhere,
  or, at the very start of the reply, a JSON object (bare or in a json fence, possibly inside
  extra braces) whose first key is ``"name"``, the shape this family's calls take
  (:data:`serve_local.callshape.CALL_HEAD`). An object that starts otherwise (an
  answer given as JSON) is left alone. The name is the model's own: once it is written (its
  closing quote), the text so far is fed to the matcher. An offered name puts every further
  token under the mask, so the call can only end as a valid call of that tool; a name not
  offered leaves the grammar, and the reply stays text (a call of a tool that does not exist is
  not turned into a call of one that does: asked something no offered tool answers, a model
  that reaches for an imaginary tool has made no call).
- ``"required"`` or a named function: from the first token (named: that tool only).
- ``"none"``: no grammar.

``parallel_tool_calls: false`` ends the reply after the first complete call; with true, further
calls are allowed, each constrained, and the reply ends at the first call that repeats one
already made in it.

Each tool's schema is prepared for the grammar by :mod:`serve_local.grammar_schemas` (local
``$ref``s rebased, objects closed, what llguidance cannot express loosened and said).

The library choice is measured in ``make bench`` (part ``grammar``) and argued in the README:
llguidance masks a 150k vocabulary in well under a millisecond, works over llama.cpp's vocab
and a Hugging Face tokenizer alike, and needs neither torch nor a GPU toolchain.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from serve_local.callshape import CALL_HEAD, CALL_HEAD_SO_FAR, TAG_CLOSE, TAG_OPEN
from serve_local.grammar_schemas import call_schema, grammar_tools, llguidance_module
from serve_local.toolcalls import CallScanner

# The call's name written whole (under "auto" the mask applies from there on).
_NAME_WRITTEN = re.compile(r'"name"\s*:\s*"(?:[^"\\]|\\.)*"')

# A call at the start of a reply, bare or fenced (the fence may be still in progress).
_FENCE = re.compile(r"```(?:json)?[ \t]*\n?[ \t]*")
_FENCE_SO_FAR = re.compile(r"`{1,3}(?:j(?:s(?:o(?:n)?)?)?)?[ \t]*\n?[ \t]*")
log = logging.getLogger("serve_local.toolgrammar")

Mode = Literal["off", "lazy"]
GRAMMAR_MODES: tuple[Mode, ...] = ("lazy", "off")


@dataclass(frozen=True)
class CallPolicy:
    """What a request allows: offered tools (name → argument schema), choice and parallelism."""

    tools: Mapping[str, Mapping[str, Any]]
    choice: str  # auto | required | none | the one tool a named choice allows
    parallel: bool

    @property
    def eager(self) -> bool:
        """Constrained from the first token (``required`` or a named function)."""
        return self.choice != "auto"

    def allowed(self) -> dict[str, Mapping[str, Any]]:
        if self.choice in ("auto", "required"):
            return dict(self.tools)
        return {self.choice: self.tools[self.choice]}


def lark_grammar(rules: CallPolicy, tag_is_token: bool) -> str:
    """The Lark grammar (llguidance dialect) for the calls ``rules`` allows."""
    if tag_is_token:  # one special token in the vocabulary (Qwen): the model emits it whole
        tag_open, tag_close = TAG_OPEN, TAG_CLOSE
    else:
        tag_open, tag_close = json.dumps(TAG_OPEN), json.dumps(TAG_CLOSE)
    more = "(SEP {})*" if rules.parallel else ""
    return "\n".join(
        [
            "start: WS? (tagged_calls | fenced_calls | bare_calls | wrapped_calls)",
            # Extra braces around the calls, as Qwen-Coder often writes them: they belong to
            # the call, so the grammar takes one pair instead of giving up on the reply.
            'wrapped_calls: "{" WS? bare_calls WS? "}"',
            f"tagged_calls: tagged {more.format('tagged')}",
            f"tagged: {tag_open} NL? call NL? {tag_close}",
            # Several calls in one fence, or each in its own (as the parser takes them).
            f"fenced_calls: fenced {more.format('fenced')}",
            f'fenced: "```" "json"? NL call {more.format("call")} NL? "```"',
            f"bare_calls: call {more.format('call')}",
            f"call: %json {json.dumps(call_schema(grammar_tools(rules.allowed())[0]))}",
            r"WS: /[ \t\r\n]{1,4}/",
            r"SEP: /\n{1,2}/",
            r'NL: "\n"',
        ]
    )


def trigger_at(text: str) -> int | None:
    """Where a call starts in ``text`` under ``tool_choice: "auto"``, if it has started."""
    stripped = text.lstrip()
    fence = _FENCE.match(stripped)
    if CALL_HEAD.match(stripped, fence.end() if fence else 0):
        return len(text) - len(stripped)
    tag = text.find(TAG_OPEN)
    return tag if tag >= 0 else None


def may_start_call(text: str) -> bool:
    """``text`` is blank or the unfinished start of a bare or fenced call: not prose yet."""
    rest = text.lstrip()
    if rest.startswith("`"):
        fence = _FENCE_SO_FAR.match(rest)
        assert fence is not None  # a backtick always matches
        if fence.end() == len(rest):
            return True
        if not rest.startswith("```"):
            return False
        rest = rest[fence.end() :]
    return not rest or CALL_HEAD_SO_FAR.fullmatch(rest) is not None


class GrammarError(ValueError):
    """The offered tools cannot be compiled into a grammar (the message says why)."""


class CallGrammar:
    """Compiles call grammars over one model's vocabulary (built once per loaded model)."""

    def __init__(self, tokenizer: Any) -> None:
        llguidance = llguidance_module()
        self.tokenizer = tokenizer
        self.n_vocab: int = tokenizer.vocab_size
        ids = tokenizer.tokenize_str(TAG_OPEN, parse_special=True)
        self.tag_is_token = len(ids) == 1 and bool(tokenizer.is_special_token(ids[0]))
        self._matcher = llguidance.LLMatcher

    def matcher(self, rules: CallPolicy) -> Any:
        grammar = self._matcher.grammar_from_lark(lark_grammar(rules, self.tag_is_token))
        # The matcher never raises: a grammar it cannot compile leaves it in an error state.
        matcher = self._matcher(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise GrammarError(matcher.get_error())
        return matcher

    def constraint(self, rules: CallPolicy) -> CallConstraint:
        return CallConstraint(self, rules)


class CallConstraint:
    """The per-request state: watches the reply, then masks every token once a call starts.

    A backend calls :meth:`observe` after each generated token with the reply's text so far
    (it returns True when the reply must end) and :meth:`allowed` before each sampling step.
    """

    def __init__(self, grammar: CallGrammar, rules: CallPolicy) -> None:
        self.rules = rules
        self._grammar = grammar
        self._matcher = grammar.matcher(rules)
        enforced, self.loosened = grammar_tools(rules.allowed())
        # The schemas the reply's calls are parsed against: the tools' own, or, where a keyword
        # was loosened, what the grammar enforced (the client checks the rest, as the harness
        # does), so that a call forced under a loosened schema still comes back as a call.
        self.schemas = enforced if self.loosened else dict(rules.allowed())
        for note in self.loosened:
            log.warning(
                "tool %r: the call grammar leaves %s unconstrained (%s); its arguments are "
                "checked after the reply",
                note.tool,
                note.keyword,
                note.detail.splitlines()[0],
            )
        self._bitmask = np.zeros((grammar.n_vocab + 31) // 32, dtype=np.int32)
        self._scanner = CallScanner()
        self._made: list[tuple[str, object]] = []  # calls closed so far in this reply
        self.active = rules.eager
        self.abandoned = False  # the model's text left the grammar (lazy trigger only)

    def observe(self, token: int, text: str) -> bool:
        """Take the token just generated and the reply so far; True when the reply must end.

        Tokens sampled under the mask are fed by id; at the trigger, the reply's text from the
        start of the call is fed instead, since the call may begin inside a token.
        """
        if self.abandoned:
            return False
        if self.active:
            ok = bool(self._matcher.consume_token(token))
        else:
            start = trigger_at(text)
            if start is None or not _NAME_WRITTEN.search(text, start):
                return False
            self.active = True
            self._scanner = CallScanner(start)
            ids = self._grammar.tokenizer.tokenize_str(text[start:], parse_special=True)
            ok = bool(self._matcher.consume_tokens(ids))
        if not ok:  # the model's own text left the grammar before the mask applied
            self.active, self.abandoned = False, True
            return False
        return self._finished(text)

    def _finished(self, text: str) -> bool:
        if self._matcher.is_stopped():
            return True
        for name, arguments in self._scanner.closed(text):
            try:
                call = (name, json.loads(arguments))
            except json.JSONDecodeError:
                continue  # not a call the parser will return either
            if call in self._made:  # a call that repeats one made before ends the reply
                return True
            self._made.append(call)
        return False

    def allowed(self) -> NDArray[np.bool_] | None:
        """Which token ids may come next (one bool per id), or None while unconstrained."""
        if not self.active or self._matcher.is_error():
            return None
        self._matcher.unsafe_compute_mask_ptr(
            self._bitmask.ctypes.data, self._bitmask.size * self._bitmask.itemsize
        )
        bits = np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")
        return bits[: self._grammar.n_vocab].astype(bool)
