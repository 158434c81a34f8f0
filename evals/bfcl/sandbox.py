"""Confine the calling process to one folder with Linux's Landlock: afterwards it can create,
change or delete files only under that folder, execute no program, and open no TCP connection
nor listen on a port. Landlock needs no privileges and holds for root too; it lasts for the
process and every child it starts.

Used by BFCL's checker (``checker.py``), which runs BFCL's code on what a model asked for. It
imports only the standard library, since the checker runs under another virtualenv's
interpreter and imports it from beside it (``evals/workerside.py`` loads the checker as a
package over this folder).

``confine`` returns what it applied ("landlock ABI N") or why it applied nothing (a kernel
without Landlock, before 5.13, or one that turned it off); the checker reports it, and the run
records it.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path

# Syscall numbers, the same on every architecture that has Landlock.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights (ABI 1 unless said).
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
# Network rights (ABI 4) and scopes (ABI 6).
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

_WRITES = (
    WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK
    | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
)  # fmt: skip
# What the folder allows: ordinary files and folders, nothing else.
_IN_FOLDER = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The Landlock ABI this kernel offers; 0 where it has none."""
    if platform.system() != "Linux":
        return 0
    found = int(_libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION))
    return max(found, 0)


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"landlock {what}: {os.strerror(errno)}")
    return result


def confine(folder: Path) -> str:
    """Allow writes under ``folder`` only, no program execution and no TCP, for this process
    and its children; what was applied, or why nothing was."""
    version = abi()
    if version < 1:
        return "none: this kernel has no Landlock (Linux 5.13 or later, enabled)"
    libc = _libc()
    handled = _WRITES | EXECUTE
    allowed = _IN_FOLDER
    if version >= 2:
        handled |= REFER
        allowed |= REFER
    if version >= 3:
        handled |= TRUNCATE
        allowed |= TRUNCATE
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if version >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if version >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    ruleset = _check(
        libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0), "ruleset"
    )
    try:
        for path, rights in ((folder, allowed), (Path(os.devnull), WRITE_FILE | TRUNCATE)):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(rights & handled, fd)
                _check(
                    libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0),
                    f"rule for {path}",
                )
            finally:
                os.close(fd)
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(libc.syscall(_RESTRICT_SELF, ruleset, 0), "restrict_self")
    finally:
        os.close(ruleset)
    return f"landlock ABI {version}: writes only under {folder}, no exec, no TCP"
