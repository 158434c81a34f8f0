"""Answer types: what kind of answer a task wants (one of its candidates, a number, yes or no,
facts by source, a short list) and what it is chosen from, the ``answer`` check kind of
:mod:`evals.tasks.checks`. An answer is credited when it commits to the expected candidate and
to no competing one; how a stated answer's commitment is read is
:mod:`evals.scoring.answers`. A new type is one model here and one line in ``TypedAnswer``."""

from __future__ import annotations

from typing import Annotated, Literal, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Crediting(Protocol):
    """What a finished run shows an answer check (a part of ``checks.Evidence``)."""

    def credits(self, answer: TypedAnswer) -> bool:
        """Whether the stated answer commits to ``answer``'s expected candidate and to no
        competing one (how commitment is read is :mod:`evals.scoring.answers`)."""
        ...


class _Answer(BaseModel):
    """What kind of answer the task wants and the candidates it is chosen from: the answer is
    credited when it commits to the expected candidate and to no competing one. How an answer's
    commitment is read is :mod:`evals.scoring.answers`."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["answer"]

    def passes(self, run: Crediting) -> bool:
        # Every answer model is one of the four the Answer union names.
        return run.credits(cast("TypedAnswer", self))


class OneOf(_Answer):
    """One of ``candidates`` (a file of the workspace, say)."""

    type: Literal["one_of"]
    expected: str = Field(min_length=1)
    candidates: list[str] = Field(min_length=2)

    @model_validator(mode="after")
    def _expected_is_a_candidate(self) -> OneOf:
        if self.expected not in self.candidates:
            raise ValueError(f"expected {self.expected!r} is not among the candidates")
        if len(set(self.candidates)) != len(self.candidates):
            raise ValueError("the candidates repeat one another")
        return self


class NumberIs(_Answer):
    """A number (a count, a setting's value) among ``candidates``, the numbers a question-blind
    answer could give; within ``tolerance`` of ``expected``."""

    type: Literal["number"]
    expected: float
    candidates: list[float] = Field(min_length=2)
    tolerance: float = Field(default=0.0, ge=0.0)

    @model_validator(mode="after")
    def _expected_is_a_candidate(self) -> NumberIs:
        if self.expected not in self.candidates:
            raise ValueError(f"expected {self.expected:g} is not among the candidates")
        return self


class YesNo(_Answer):
    """Yes or no, about ``subject`` (the file a question names)."""

    type: Literal["yes_no"]
    expected: bool
    subject: str = Field(min_length=1)


class Facts(_Answer):
    """Facts by source: the answer states some fact of every ``expected`` source and no fact of
    any other (``expected`` one file for "what does X say", every file for "read each one")."""

    type: Literal["facts"]
    expected: list[str] = Field(min_length=1)
    facts: dict[str, list[str]] = Field(min_length=1)

    @model_validator(mode="after")
    def _sources_have_facts(self) -> Facts:
        unknown = [s for s in self.expected if s not in self.facts]
        if unknown:
            raise ValueError(f"expected sources without facts: {', '.join(unknown)}")
        if any(not facts for facts in self.facts.values()):
            raise ValueError("every source needs at least one fact")
        return self


class ListOf(_Answer):
    """A short list of ``candidates`` (the three busiest customers, say): the answer names
    every expected one and no other. Order is not read."""

    type: Literal["list"]
    expected: list[str] = Field(min_length=1)
    candidates: list[str] = Field(min_length=2)

    @model_validator(mode="after")
    def _expected_are_candidates(self) -> ListOf:
        missing = [e for e in self.expected if e not in self.candidates]
        if missing:
            raise ValueError(f"expected {', '.join(missing)} not among the candidates")
        if len(set(self.expected)) != len(self.expected):
            raise ValueError("the expected names repeat one another")
        return self


TypedAnswer = OneOf | NumberIs | YesNo | Facts | ListOf
Answer = Annotated[TypedAnswer, Field(discriminator="type")]
ANSWER_TYPES = frozenset({"one_of", "number", "yes_no", "facts", "list"})
