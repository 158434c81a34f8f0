"""The project's lab: its studies, conformance runs and the writers of this repository's
``docs/`` and committed ``results/``. Run from a checkout by ``make`` (``python -m lab``);
never installed (``pip install .`` installs ``serve_local``, ``harness`` and ``evals``)."""
