"""The Berkeley Function Calling Leaderboard through this stack: its items sent through the
project's client to any OpenAI-shaped server, its own AST checker judging the calls.

``bfcl-eval`` (data and checker) lives in a virtualenv of its own (``.venv-bfcl``): its
pins and imports would not fit this one. ``checker.py`` runs there and answers over a pipe
(``bridge.py``); ``items.py`` is what is sent and what a reply becomes; ``run.py`` runs a
sample; ``report.py`` writes summaries and the comparison with the published figures
(``published.json``).
"""
