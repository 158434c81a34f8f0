"""The database environment, whole: the SQL tools over a generated bank (``environment``),
what a task names (``fields``) and its record keeps (``data``), the bank, its questions and
their answer key (``sql``: ``loopbench generate --source sql``), and the analyst's figures
(``figures``) every summary of its runs carries."""
