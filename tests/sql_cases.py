"""What both databases are tried with: the writes a read-only database must refuse, and a
statement that never ends."""

from __future__ import annotations

WRITES = [
    "DELETE FROM transactions",
    "DROP TABLE accounts",
    "UPDATE accounts SET status = 'closed'",
    "INSERT INTO branches VALUES (99, 'Fake', 'Nowhere')",
    "CREATE TABLE notes (x INTEGER)",
]
SQLITE_WRITES = [
    *WRITES,
    "ATTACH DATABASE ':memory:' AS scratch",
    "PRAGMA query_only = 0",
    "PRAGMA journal_mode = DELETE",
]
POSTGRES_WRITES = [
    *WRITES,
    "SET TRANSACTION READ WRITE",
    "SET TRANSACTION READ WRITE; DELETE FROM transactions",
    "COMMIT; DELETE FROM transactions",
    "CREATE TEMP TABLE notes (x INTEGER)",
]
# Counts every table's rows: what a write would change.
COUNTS = (
    "SELECT (SELECT COUNT(*) FROM branches), (SELECT COUNT(*) FROM customers), "
    "(SELECT COUNT(*) FROM accounts), (SELECT COUNT(*) FROM transactions), "
    "(SELECT COUNT(*) FROM accounts WHERE status = 'closed')"
)
NEVER_ENDS = (
    "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT COUNT(*) FROM r"
)
