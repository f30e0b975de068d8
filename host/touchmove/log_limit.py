"""Log lines about bad input, limited per source (a port, a board): a flood of garbage makes a few lines and a
count of what was left out, never a log that grows with the garbage.

Each source may log :data:`LINES_PER_WINDOW` lines per :data:`WINDOW_S`; further lines in that window are
counted, and one line says how many were suppressed once the window is over (at the next line of that source or
the next :meth:`LogLimit.flush`, which the owner calls from its timer).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

#: Lines about bad input logged per source and window.
LINES_PER_WINDOW = 10
#: The window (s).
WINDOW_S = 10.0


@dataclass(slots=True)
class _Window:
    start: float
    logged: int = 0
    suppressed: int = 0


class LogLimit:
    """Per-source limits on one logger's lines about ``what`` (e.g. "bad input")."""

    def __init__(self, logger: logging.Logger, what: str, *, lines: int = LINES_PER_WINDOW,
                 window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.logger, self.what = logger, what
        self.lines, self.window_s, self.clock = lines, window_s, clock
        self._windows: dict[str, _Window] = {}
        self.suppressed_total = 0

    def log(self, level: int, source: str, msg: str, *args: object) -> bool:
        """Log ``msg % args`` for ``source`` unless its window's lines are spent (then count it); return whether
        it was logged."""
        now = self.clock()
        window = self._windows.get(source)
        if window is not None and now - window.start >= self.window_s:
            self._close(source, window, now)
            window = None
        if window is None:
            window = self._windows[source] = _Window(now)
        if window.logged < self.lines:
            window.logged += 1
            self.logger.log(level, msg, *args)
            return True
        window.suppressed += 1
        self.suppressed_total += 1
        return False

    def flush(self) -> None:
        """Close the windows that are over: one line each that suppressed lines, with their count."""
        now = self.clock()
        for source, window in list(self._windows.items()):
            if now - window.start >= self.window_s:
                self._close(source, window, now)

    def _close(self, source: str, window: _Window, now: float) -> None:
        del self._windows[source]
        if window.suppressed:
            self.logger.warning("%s: %d more line(s) about %s suppressed in the last %.0f s", source,
                                window.suppressed, self.what, now - window.start)
