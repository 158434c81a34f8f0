"""The sandbox folder the tools work on, and the rule that keeps them inside it."""

from __future__ import annotations

import posixpath
from pathlib import Path

from harness.errors import PathRefused, ToolError

_ERRORS_LOG = (
    "2026-03-02 10:14:03 INFO scheduler started with 8 workers\n"
    "2026-03-02 10:15:41 ERROR worker 7 timed out after 30000 ms\n"
    "2026-03-02 10:15:42 INFO batch 4411 requeued\n"
)
_ACCESS_LOG = "10.0.0.4 GET /health 200\n10.0.0.9 POST /jobs 201\n10.0.0.9 GET /jobs/4411 200\n"
SEED_FILES: dict[str, str] = {
    "errors.log": _ERRORS_LOG,
    "access.log": _ACCESS_LOG,
    "notes.txt": "Remember to rotate your logs.\n",
}


def create_workspace(root: str | Path, files: dict[str, str] | None = None) -> Workspace:
    """Create ``root`` holding the seed files (or ``files``); existing files are kept."""
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    for name, content in (SEED_FILES if files is None else files).items():
        target = path / name
        if not target.exists():
            target.write_text(content, encoding="utf-8")
    return Workspace(path)


class Workspace:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()

    def files(self) -> list[Path]:
        """Visible files, by name; dot-files (the harness's own bookkeeping) are hidden, and so
        is a link that leads out of the folder: nothing outside it is ever looked at."""
        return sorted(
            p for p in self.root.iterdir() if not p.name.startswith(".") and self._inside_file(p)
        )

    def _inside_file(self, path: Path) -> bool:
        """A regular file inside the folder, reached through links that stay inside it."""
        if path.is_symlink():
            target = path.resolve()
            return target.is_relative_to(self.root) and target.is_file()
        return path.is_file()

    def sizes(self) -> dict[str, int]:
        """The visible files' names and sizes in bytes, by name; a link's size is that of the
        file inside the folder it names."""
        return {p.name: p.resolve().stat().st_size for p in self.files()}

    def resolve(self, name: object) -> Path:
        """The workspace path for ``name``; anything that could leave the folder is refused."""
        if not isinstance(name, str):
            raise PathRefused(
                f"refused: path must be a string, not {type(name).__name__}; send a file name "
                "such as 'notes.txt'."
            )
        if not name.strip():
            raise ToolError("path must be a non-empty file name, for example 'notes.txt'.")
        candidate = self._relative(name)
        if candidate.is_absolute() or ".." in candidate.parts:
            raise PathRefused(
                f"refused: {name!r} is outside the workspace. Only files inside it can be "
                "used; this will not change if you retry."
            )
        resolved = (self.root / candidate).resolve()
        if not resolved.is_relative_to(self.root):
            raise PathRefused(
                f"refused: {name!r} leads outside the workspace (through a link). "
                "This will not change if you retry."
            )
        private = [p for p in (*candidate.parts, *resolved.relative_to(self.root).parts) if
                   p.startswith(".") and p != "."]  # fmt: skip
        if private:
            raise PathRefused(
                f"refused: {name!r} is private to the harness ({private[0]!r}). "
                "This will not change if you retry."
            )
        return resolved

    def _relative(self, name: str) -> Path:
        _check_usable(name)
        candidate = Path(name)
        if candidate.is_absolute():
            # The folder's own path, as a prompt may give it, names a file inside it.
            spelled = Path(posixpath.normpath(name))
            if spelled != self.root and spelled.is_relative_to(self.root):
                candidate = spelled.relative_to(self.root)
        return candidate

    def entry(self, name: object) -> Path:
        """The folder entry ``name`` itself, to remove it: a link as the link, never the file
        it names (only the folders above it are resolved), after every check
        :meth:`existing` makes."""
        self.existing(name)
        assert isinstance(name, str)  # existing() refused anything else
        named = self.root / self._relative(name)
        return named.parent.resolve() / named.name

    def existing(self, name: object, name_files: bool = False) -> Path:
        """The file ``name``; a missing one is an error that says how to find what exists, and,
        with ``name_files``, names every file there is."""
        path = self.resolve(name)
        if path.is_file() and path.stat().st_nlink > 1:
            # Another name for the same data may sit outside the folder: the link count says a
            # second name exists, never where, so no file with one is read or deleted.
            raise PathRefused(
                f"refused: {name!r} has other names (hard links) that may lie outside the "
                "workspace. This will not change if you retry."
            )
        if not path.is_file():
            message = f"no such file: {name}. Call list_files to see what exists."
            if name_files:
                names = ", ".join(p.name for p in self.files()) or "none"
                message += f" The files here are: {names}."
            raise ToolError(message)
        return path


def normal_name(path: str) -> str:
    """A path as the model wrote it, in one spelling: ``./notes.txt``, ``notes.txt/.`` and
    `` notes.txt`` are all ``notes.txt``."""
    return posixpath.normpath(path.strip())


MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255  # the longest file name the usual file systems hold


def _check_usable(name: str) -> None:
    """Refuse names the file system would reject with an exception rather than an answer."""
    if "\x00" in name:
        raise PathRefused("refused: the path contains a NUL byte, which no file name can hold.")
    try:
        parts = [part.encode("utf-8") for part in Path(name).parts]
    except UnicodeEncodeError as exc:
        raise PathRefused("refused: the path is not valid Unicode text.") from exc
    if len(name) > MAX_PATH_CHARS or any(len(part) > MAX_NAME_BYTES for part in parts):
        raise PathRefused(
            f"refused: the path is {len(name)} characters long; file names here are short "
            f"(at most {MAX_NAME_BYTES} bytes). Call list_files to see what exists."
        )
