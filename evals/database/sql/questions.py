"""The ``sql`` source's questions: each kind has its phrasings, the parameters it is asked
with, and its gold SQL. The expected answer is what the gold SQL returns on the generated
database, computed, never typed in; the candidates a question-blind answer chooses among come
from the same data (the kind's value for every parameter, or every name of the table the
answer names).

The gold SQL is portable: it runs unchanged on SQLite and PostgreSQL (dates compared as
``ts >= '2026-03-01'``, a day as ``substr(CAST(ts AS TEXT), 1, 10)``), so one statement
gives every database's answer, and the tests check that both give the same.

A question's text names everything its answer depends on, so the gold SQL is a function of
the question alone (``gold_for``): the scripted oracle reads it from the question it is asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from evals.database.sql.bank import CURRENCIES, KINDS, MONTHS, TABLES, YEAR, Bank

AnswerShape = Literal["number", "name", "names"]


def _month_range(month: str) -> tuple[str, str]:
    m = MONTHS.index(month) + 1
    end = f"{YEAR}-{m + 1:02d}-01" if m < 12 else f"{YEAR + 1}-01-01"
    return f"{YEAR}-{m:02d}-01", end


def _q(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_JOIN_CUSTOMER = (
    " FROM transactions t JOIN accounts a ON a.id = t.account_id"
    " JOIN customers c ON c.id = a.customer_id"
)


@dataclass(frozen=True)
class Kind:
    """One kind of question.

    ``sql`` is the gold query for a choice of parameters. For a ``number`` it returns one
    value; for a ``name`` or ``names`` it returns rows of (name, score) best first, and the
    answer is the first ``take`` names (a question is asked only where the score of the last
    name taken differs from the next one's, so the answer is unique)."""

    name: str
    phrasings: tuple[str, ...]
    shape: AnswerShape
    sql: Callable[[dict[str, str]], str]
    params: Callable[[Bank], list[dict[str, str]]]
    names_from: str | None = None  # the table whose names are the candidates
    take: int = 1
    tolerance: float = 0.0
    queries: str = "one"  # how many queries a careful analyst needs, as the docs say it

    def gold(self, params: dict[str, str]) -> str:
        sql = self.sql(params)
        return sql if self.shape == "number" else f"{sql} LIMIT {self.take}"


def _branches(bank: Bank) -> list[dict[str, str]]:
    return [{"branch": n} for n in bank.names("branches")]


def _kind_month(bank: Bank) -> list[dict[str, str]]:
    return [{"kind": k, "month": m} for k in KINDS for m in MONTHS]


def _kind_currency(bank: Bank) -> list[dict[str, str]]:
    return [{"kind": k, "currency": c} for k in KINDS for c in CURRENCIES]


def _currency_month(bank: Bank) -> list[dict[str, str]]:
    return [{"currency": c, "month": m} for c in CURRENCIES for m in MONTHS]


def _where_month(month: str, alias: str = "t.") -> str:
    start, end = _month_range(month)
    return f"{alias}ts >= {_q(start)} AND {alias}ts < {_q(end)}"


KINDS_OF_QUESTION: tuple[Kind, ...] = (
    Kind(
        "customers_at_branch",
        (
            "How many customers does the {branch} branch have?",
            "Count the customers of the {branch} branch.",
        ),
        "number",
        lambda p: (
            "SELECT COUNT(*) FROM customers c JOIN branches b ON b.id = c.branch_id "
            f"WHERE b.name = {_q(p['branch'])}"
        ),
        _branches,
    ),
    Kind(
        "count_in_month",
        (
            "How many {kind} transactions were made in {month} 2026?",
            "What is the number of {kind} transactions in {month} 2026?",
        ),
        "number",
        lambda p: (
            f"SELECT COUNT(*) FROM transactions t WHERE t.kind = {_q(p['kind'])} "
            f"AND {_where_month(p['month'])}"
        ),
        _kind_month,
    ),
    Kind(
        "total_by_currency",
        (
            "What is the total amount of {kind} transactions on {currency} accounts?",
            "Add up every {kind} on {currency} accounts: what is the total amount?",
        ),
        "number",
        lambda p: (
            "SELECT ROUND(SUM(t.amount), 2) FROM transactions t "
            f"JOIN accounts a ON a.id = t.account_id WHERE t.kind = {_q(p['kind'])} "
            f"AND a.currency = {_q(p['currency'])}"
        ),
        _kind_currency,
        tolerance=0.01,
        queries="one join",
    ),
    Kind(
        "largest_single",
        (
            "What was the largest single {kind} on a {currency} account?",
            "Of all {kind} transactions on {currency} accounts, what was the biggest amount?",
        ),
        "number",
        lambda p: (
            "SELECT MAX(t.amount) FROM transactions t "
            f"JOIN accounts a ON a.id = t.account_id WHERE t.kind = {_q(p['kind'])} "
            f"AND a.currency = {_q(p['currency'])}"
        ),
        _kind_currency,
        tolerance=0.01,
        queries="one join",
    ),
    Kind(
        "average_at_branch",
        (
            "What is the average {kind} amount on {currency} accounts of customers of the "
            "{branch} branch?",
        ),
        "number",
        lambda p: (
            "SELECT ROUND(AVG(t.amount), 2)"
            + _JOIN_CUSTOMER
            + " JOIN branches b ON b.id = c.branch_id"
            f" WHERE t.kind = {_q(p['kind'])} AND a.currency = {_q(p['currency'])}"
            f" AND b.name = {_q(p['branch'])}"
        ),
        lambda bank: [
            {"kind": k, "currency": c, "branch": b}
            for k in ("deposit", "withdrawal")
            for c in CURRENCIES
            for b in bank.names("branches")
        ],
        tolerance=0.01,
        queries="a join over four tables",
    ),
    Kind(
        "net_inflow",
        ("By how much did deposits exceed withdrawals on {currency} accounts in {month} 2026?",),
        "number",
        lambda p: (
            "SELECT ROUND(SUM(CASE WHEN t.kind = 'deposit' THEN t.amount ELSE 0 END) - "
            "SUM(CASE WHEN t.kind = 'withdrawal' THEN t.amount ELSE 0 END), 2) FROM transactions t "
            f"JOIN accounts a ON a.id = t.account_id WHERE a.currency = {_q(p['currency'])} "
            f"AND {_where_month(p['month'])}"
        ),
        _currency_month,
        tolerance=0.01,
        queries="two sums (or one with CASE)",
    ),
    Kind(
        "top_depositor",
        (
            "Which customer deposited the most money into {currency} accounts in total?",
            "Who is the biggest depositor on {currency} accounts, by total amount?",
        ),
        "name",
        lambda p: (
            "SELECT c.name, SUM(t.amount) AS total"
            + _JOIN_CUSTOMER
            + f" WHERE t.kind = 'deposit' AND a.currency = {_q(p['currency'])}"
            " GROUP BY c.id, c.name ORDER BY total DESC"
        ),
        lambda bank: [{"currency": c} for c in CURRENCIES],
        names_from="customers",
        queries="a grouped join",
    ),
    Kind(
        "busiest_three",
        ("Which three customers made the most transactions in {month} 2026?",),
        "names",
        lambda p: (
            "SELECT c.name, COUNT(*) AS n"
            + _JOIN_CUSTOMER
            + f" WHERE {_where_month(p['month'])} GROUP BY c.id, c.name ORDER BY n DESC"
        ),
        lambda bank: [{"month": m} for m in MONTHS],
        names_from="customers",
        take=3,
        queries="a grouped join, top three",
    ),
    Kind(
        "branch_most_withdrawals",
        ("Which branch's customers made the most withdrawals in {month} 2026?",),
        "name",
        lambda p: (
            "SELECT b.name, COUNT(*) AS n"
            + _JOIN_CUSTOMER
            + " JOIN branches b ON b.id = c.branch_id"
            f" WHERE t.kind = 'withdrawal' AND {_where_month(p['month'])}"
            " GROUP BY b.id, b.name ORDER BY n DESC"
        ),
        lambda bank: [{"month": m} for m in MONTHS],
        names_from="branches",
        queries="a join over four tables, grouped",
    ),
    Kind(
        "unusual_withdrawal",
        (
            "Is there anything unusual among the {currency} withdrawals? One is far larger "
            "than the rest: which customer made it?",
        ),
        "name",
        lambda p: (
            "SELECT c.name, t.amount"
            + _JOIN_CUSTOMER
            + f" WHERE t.kind = 'withdrawal' AND a.currency = {_q(p['currency'])}"
            " ORDER BY t.amount DESC"
        ),
        lambda bank: [{"currency": c} for c in CURRENCIES],
        names_from="customers",
        queries="an overview, then the detail",
    ),
    Kind(
        "unusual_day",
        (
            "Something unusual happened: on one day, one account had far more transactions "
            "than any account has on a normal day. Whose account was it?",
        ),
        "name",
        lambda p: (
            "SELECT c.name, COUNT(*) AS n"
            + _JOIN_CUSTOMER
            + " GROUP BY a.id, c.name, substr(CAST(t.ts AS TEXT), 1, 10) ORDER BY n DESC"
        ),
        lambda bank: [{}],
        names_from="customers",
        queries="a grouped overview, then the detail",
    ),
)
BY_NAME = {k.name: k for k in KINDS_OF_QUESTION}


def _pattern(phrasing: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", phrasing)
    regex = "".join(
        re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts)
    )
    return re.compile(f"^{regex}$")


_PATTERNS = [(k, _pattern(p)) for k in KINDS_OF_QUESTION for p in k.phrasings]


def parse(question: str) -> tuple[Kind, dict[str, str]] | None:
    """The kind and parameters of a question of this source, or None."""
    for kind, pattern in _PATTERNS:
        if m := pattern.match(question.strip()):
            return kind, m.groupdict()
    return None


def reading_queries(question: str) -> list[str]:
    """Every table read whole, and the question's gold query: whose results hold everything a
    grounded check of the question asks for (what the question-blind strategies read)."""
    gold = gold_for(question)
    return [f"SELECT * FROM {t}" for t in TABLES] + ([gold[0]] if gold else [])


def gold_for(question: str) -> tuple[str, AnswerShape, int] | None:
    """The gold SQL of a question of this source, what shape its answer takes and how many
    names it takes; None for any other question."""
    parsed = parse(question)
    if parsed is None:
        return None
    kind, params = parsed
    return kind.gold(params), kind.shape, kind.take
