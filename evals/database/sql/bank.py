"""The generated banking database: branches, customers, accounts (each in one currency) and
transactions (an amount, a time and a kind), from ``random.Random(seed)``.

Small on purpose: 5 branches, 30 customers, about 45 accounts and 600 transactions over the
first half of 2026, so that the schema and a few result sets fit a small model's context. Two
anomalies are planted for the "anything unusual" questions: one withdrawal far larger than any
other of its currency, and one account with a burst of transactions on a single day. The same
seed always gives the same rows, and ``fingerprint`` names them.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple

GENERATOR_VERSION = 1

SCHEMA = (
    "CREATE TABLE branches (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL)",
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
    "branch_id INTEGER NOT NULL REFERENCES branches(id), joined_on DATE NOT NULL)",
    "CREATE TABLE accounts (id INTEGER PRIMARY KEY, "
    "customer_id INTEGER NOT NULL REFERENCES customers(id), currency TEXT NOT NULL, "
    "status TEXT NOT NULL, opened_on DATE NOT NULL)",
    "CREATE TABLE transactions (id INTEGER PRIMARY KEY, "
    "account_id INTEGER NOT NULL REFERENCES accounts(id), ts TIMESTAMP NOT NULL, "
    "amount NUMERIC(14,2) NOT NULL, kind TEXT NOT NULL)",
)
TABLES = ("branches", "customers", "accounts", "transactions")
# The table that names the data's version; hidden from describe (its name starts with _).
META_TABLE = "_loopbench"

BRANCHES = (
    ("Hoan Kiem", "Hanoi"), ("Ba Dinh", "Hanoi"), ("Ben Thanh", "Ho Chi Minh City"),
    ("Thu Duc", "Ho Chi Minh City"), ("Han River", "Da Nang"), ("Ninh Kieu", "Can Tho"),
    ("Hong Bang", "Hai Phong"), ("Perfume River", "Hue"),
)  # fmt: skip
FAMILY = (
    "Nguyen", "Tran", "Le", "Pham", "Hoang", "Vu", "Vo", "Dang", "Bui", "Do", "Ho", "Ngo",
    "Duong", "Ly", "Phan", "Truong",
)  # fmt: skip
GIVEN = (
    "Anh", "Binh", "Chau", "Dung", "Giang", "Hai", "Hanh", "Hieu", "Khanh", "Lan", "Linh",
    "Long", "Mai", "Minh", "Nam", "Ngoc", "Phuong", "Quang", "Son", "Tam", "Thao", "Trang",
    "Tuan", "Uyen", "Viet", "Xuan", "Yen", "Khoa", "Loan", "Hung",
)  # fmt: skip
CURRENCIES = ("VND", "USD", "EUR")
KINDS = ("deposit", "withdrawal", "transfer", "fee")
MONTHS = ("January", "February", "March", "April", "May", "June")
YEAR = 2026

N_BRANCHES = 5
N_CUSTOMERS = 30
N_TRANSACTIONS = 600


@dataclass(frozen=True)
class Bank:
    """The rows of every table, as Python values (dates and times as ISO text, amounts as
    Decimal), in insertion order."""

    seed: int
    rows: dict[str, list[tuple[Any, ...]]]

    @property
    def fingerprint(self) -> str:
        canonical = json.dumps(
            {"version": GENERATOR_VERSION, "schema": SCHEMA, "rows": self.rows},
            default=str,
            separators=(",", ":"),
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def names(self, table: str) -> list[str]:
        return [str(r[1]) for r in self.rows[table]]


class _Txn(NamedTuple):
    account: int
    when: datetime
    amount: Decimal
    kind: str


def _amount(rng: random.Random, currency: str, kind: str) -> Decimal:
    if currency == "VND":
        low, high = (10_000, 200_000) if kind == "fee" else (200_000, 40_000_000)
        return Decimal(rng.randrange(low // 1000, high // 1000) * 1000)
    low, high = (100, 2_500) if kind == "fee" else (1_000, 300_000)  # cents
    return Decimal(rng.randrange(low, high)) / 100


def generate(seed: int) -> Bank:
    rng = random.Random(f"bank-{seed}")
    branches = [
        (i + 1, name, city) for i, (name, city) in enumerate(rng.sample(BRANCHES, N_BRANCHES))
    ]
    people = rng.sample([f"{g} {f}" for f in FAMILY for g in GIVEN], N_CUSTOMERS)
    start = date(2023, 1, 1)
    customers = [
        (
            i + 1,
            name,
            rng.randrange(N_BRANCHES) + 1,
            (start + timedelta(rng.randrange(900))).isoformat(),
        )
        for i, name in enumerate(people)
    ]
    accounts: list[tuple[int, int, str, str, str]] = []
    for customer in customers:
        for _ in range(rng.choice((1, 1, 2))):
            opened = date.fromisoformat(customer[3]) + timedelta(rng.randrange(200))
            status = "closed" if rng.random() < 0.12 else "active"
            currency = rng.choices(CURRENCIES, weights=(5, 3, 2))[0]
            accounts.append((len(accounts) + 1, customer[0], currency, status, opened.isoformat()))
    first = datetime(YEAR, 1, 1)
    seconds = int((datetime(YEAR, 7, 1) - first).total_seconds())
    transactions: list[_Txn] = []
    for _ in range(N_TRANSACTIONS):
        account = rng.choice(accounts)
        kind = rng.choices(KINDS, weights=(4, 3, 2, 1))[0]
        when = first + timedelta(seconds=rng.randrange(seconds))
        transactions.append(_Txn(account[0], when, _amount(rng, account[2], kind), kind))
    # Planted: one withdrawal far larger than any other of its currency ...
    usd = [a for a in accounts if a[2] == "USD"] or accounts
    big = rng.choice(usd)
    currency_of = {a[0]: a[2] for a in accounts}
    top = max(
        (
            t.amount
            for t in transactions
            if t.kind == "withdrawal" and currency_of[t.account] == big[2]
        ),
        default=Decimal(1000),
    )
    when = first + timedelta(seconds=rng.randrange(seconds))
    transactions.append(_Txn(big[0], when, (top * 12).quantize(Decimal("0.01")), "withdrawal"))
    # ... and a burst: one account, one day, a dozen fees.
    burst = rng.choice([a for a in accounts if a[0] != big[0]])
    day = first + timedelta(days=rng.randrange(180))
    for k in range(12):
        moment = day + timedelta(hours=9, minutes=7 * k + rng.randrange(5))
        transactions.append(_Txn(burst[0], moment, _amount(rng, burst[2], "fee"), "fee"))
    transactions.sort(key=lambda t: t.when)
    rows: list[tuple[Any, ...]] = [
        (i + 1, t.account, t.when.isoformat(sep=" "), t.amount, t.kind)
        for i, t in enumerate(transactions)
    ]
    return Bank(
        seed,
        {"branches": branches, "customers": customers, "accounts": accounts, "transactions": rows},
    )
