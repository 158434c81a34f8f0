"""Progress of an eval: a line per finished task run, and an overall bar with an ETA (tqdm)
when the output is a terminal. The lines carry the elapsed time and the ETA too, so a log
file shows progress without the bar."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

from harness.display import printable


class Progress:
    def __init__(
        self, total: int, echo: Callable[[str], None], bar: bool = False, already: int = 0
    ) -> None:
        """``total`` task runs, ``already`` of them done before (kept by a resume)."""
        self.total = total
        self.already = self.done = already
        self.echo = echo
        self.start = time.monotonic()
        self.bar = (
            tqdm(total=total, initial=already, unit="task", dynamic_ncols=True)
            if bar and total > already
            else None
        )

    def line(self, text: str) -> None:
        """One line to the terminal; the model's text in it is shown, never obeyed."""
        text = printable(text)
        if self.bar is not None:
            self.bar.write(text)
        else:
            self.echo(text)

    def finished(self, text: str) -> None:
        """One task run finished: its line, then the bar moves."""
        self.done += 1
        elapsed = time.monotonic() - self.start
        eta = elapsed / (self.done - self.already) * (self.total - self.done)
        self.line(
            f"[{self.done}/{self.total}] {text}  ({tqdm.format_interval(elapsed)} elapsed, "
            f"eta {tqdm.format_interval(eta)})"
        )
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
