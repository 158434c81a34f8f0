"""A cancellation token that reaches the provider call and every tool."""

from __future__ import annotations

import asyncio
import contextlib


class Cancelled(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CancelToken:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: str | None = None
        self._linked: list[CancelToken] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()
            for child in self._linked:
                child.cancel(reason)

    def link(self, child: CancelToken) -> None:
        """Cancelling this token cancels ``child`` too (a run's token, a subagent's)."""
        self._linked.append(child)
        if self.cancelled:
            child.cancel(self.reason or "cancelled")

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled(self.reason or "cancelled")

    async def wait(self) -> None:
        await self._event.wait()

    async def sleep(self, seconds: float) -> None:
        """Sleep, but wake and raise :class:`Cancelled` the moment the token fires."""
        self.raise_if_cancelled()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout=seconds)
        self.raise_if_cancelled()
