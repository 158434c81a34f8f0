"""Tools as typed code declares them: each pydantic model is one tool's arguments, the way the
Agents SDK's ``function_tool``, FastMCP and Inspect's typed tools turn a function's parameters
into a JSON Schema (nested models under ``$defs``, enums, literals, optionals, a discriminated
union, recursion, dicts, bounds, patterns, and a tool without arguments). Part of the corpus of
:mod:`lab.conformance.tool_schemas`."""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, Field


class Cabin(StrEnum):
    economy = "economy"
    business = "business"


class Passenger(BaseModel):
    first_name: str
    last_name: str
    date_of_birth: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class Flight(BaseModel):
    flight_number: str
    date: str


class BookTrip(BaseModel):
    """Book flights for passengers."""

    flights: list[Flight]
    passengers: list[Passenger] = Field(min_length=1, max_length=5)
    cabin: Cabin
    insurance: Literal["yes", "no"]
    note: str | None = None


class Node(BaseModel):
    name: str
    children: list[Node] = []


class SaveTree(BaseModel):
    """Save a tree of named nodes."""

    root: Node


class Address(BaseModel):
    """Set a postal address."""

    street: str
    city: str
    postcode: str = Field(min_length=3, max_length=10)
    country: str = "NL"


class Priority(int, Enum):
    low = 1
    high = 2


class TagItems(BaseModel):
    """Tag items with counts."""

    tags: dict[str, int]
    priority: Priority
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    ratio: float = Field(default=0.5, gt=0, lt=1)


class Square(BaseModel):
    kind: Literal["square"]
    side: float


class Circle(BaseModel):
    kind: Literal["circle"]
    radius: float


class Draw(BaseModel):
    """Draw a shape."""

    shape: Annotated[Square | Circle, Field(discriminator="kind")]
    color: str | int | None = None


class Lookup(BaseModel):
    """Look up an order by id or by email."""

    order_id: str | None = Field(default=None, pattern=r"^#W\d{7}$")
    email: str | None = None
    include: list[Literal["items", "payments", "address"]] = []


class NoArguments(BaseModel):
    """Check the status bar."""


TOOLS: dict[str, type[BaseModel]] = {
    "book_trip": BookTrip,
    "save_tree": SaveTree,
    "set_address": Address,
    "tag_items": TagItems,
    "draw": Draw,
    "lookup_order": Lookup,
    "check_status": NoArguments,
}
