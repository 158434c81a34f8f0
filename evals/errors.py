"""The errors evals raises on purpose, on one base: ``python -m evals`` reports any of them as
one line and exit status 1, never a traceback.

EvalError
├── TaskFileError    a task file that cannot be read or checked; names the file and the line
├── RunFileError     a run file that is missing or holds a line that is no record
├── PairingError     two run files that cannot be compared task by task
├── RescoreError     a run that cannot be scored again with the checks it names
├── CorpusError      a labelled corpus line that is malformed
├── ExportError      a run that cannot be written as an Inspect log
└── BfclUnavailable  BFCL's own environment is not installed

A server that cannot be reached, or serves another model, is an EvalError itself.
"""

from __future__ import annotations


class EvalError(Exception):
    """Base of every error evals raises on purpose; its text is what the user reads."""


class RunFileError(EvalError):
    """A run file, or a folder of them, that is not there, or a line of one that is no record."""
