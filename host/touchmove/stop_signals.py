"""SIGINT and SIGTERM as a clean stop of a command's event loop, and the exit status saying which came."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

EXIT_INTERRUPTED = 130   # 128 + SIGINT: stopped by Ctrl-C


class StopSignals:
    """Call ``stop`` on SIGINT or SIGTERM; :attr:`status` is then 130 after Ctrl-C, 0 after SIGTERM (a service
    manager's ordinary stop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stop: Callable[[], object]) -> None:
        self.received: int | None = None
        self._stop = stop
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: int) -> None:
        if self.received is None:
            self.received = sig
        self._stop()

    @property
    def status(self) -> int:
        """Return the exit status for the signal received (0 when none or SIGTERM)."""
        return EXIT_INTERRUPTED if self.received == signal.SIGINT else 0
