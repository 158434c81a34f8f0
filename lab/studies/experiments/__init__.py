"""The chapter's measurements, reproduced through the real harness over real HTTP.

Each part module holds experiments on one theme; an experiment takes the scripted servers'
``Env`` and returns a ``Result`` that renders itself as Markdown. ``suite`` names them all,
starts scripted servers in this process (on free loopback ports), runs the ones asked for and
writes ``results/experiments.md`` and ``results/experiments.json``.
"""
