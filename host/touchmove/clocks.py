"""The two clocks a long-running part reads, passed in as one object (tests give a :class:`ManualClock`).

- :meth:`Clock.monotonic` only goes forward: durations and deadlines (the broadcast delay) are measured on it,
  so an NTP or RTC step of the hall PC's wall clock changes none of them;
- :meth:`Clock.wall` is the date and time of day: for display, dates and schedules only.

:meth:`Clock.boot_id` names the monotonic clock's origin: two readings taken with the same non-empty boot id
(two processes of one boot) can be compared; across a reboot only the wall clock links them.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Protocol

BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")


class Clock(Protocol):
    """Where a part reads the time."""

    def monotonic(self) -> float:
        """Return seconds on a clock that never steps back (its origin is arbitrary)."""
        ...

    def wall(self) -> float:
        """Return seconds since the epoch (may step either way: display and dates only)."""
        ...

    def boot_id(self) -> str:
        """Return what names the monotonic clock's origin ("" when not known: no two runs compare)."""
        ...


class SystemClock:
    """The machine's clocks: ``time.monotonic`` (CLOCK_MONOTONIC: shared by every process of one boot) and
    ``time.time``."""

    def __init__(self) -> None:
        self._boot: str | None = None

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def boot_id(self) -> str:
        if self._boot is None:
            try:
                self._boot = BOOT_ID_PATH.read_text(encoding="ascii").strip()
            except OSError:
                self._boot = ""
        return self._boot


class ManualClock:
    """A clock that moves only when told: :meth:`advance` moves both clocks (time passing), :meth:`step_wall`
    only the wall clock (an NTP correction)."""

    def __init__(self, wall: float = 1_800_000_000.0, monotonic: float = 1000.0, boot: str = "manual") -> None:
        self.now_wall = wall
        self.now_monotonic = monotonic
        self.boot = boot

    def monotonic(self) -> float:
        return self.now_monotonic

    def wall(self) -> float:
        return self.now_wall

    def boot_id(self) -> str:
        return self.boot

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass (both clocks)."""
        if seconds < 0:
            raise ValueError("time does not pass backwards: use step_wall for a wall clock step")
        self.now_monotonic += seconds
        self.now_wall += seconds

    def step_wall(self, seconds: float) -> None:
        """Step the wall clock alone (either way), as an NTP or RTC correction does."""
        self.now_wall += seconds


class LoopClock:
    """One event loop's clock as the monotonic clock (``loop.time()``), the system's as the wall clock.

    asyncio's loops read ``time.monotonic`` themselves, so in a daemon this is the system's monotonic clock; on a
    loop whose time is virtual (the tests' loops, which jump to the next timer when nothing else is ready) the
    readings and the timers the loop runs agree, and an in-process test of minutes of board time takes
    milliseconds."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def monotonic(self) -> float:
        return self.loop.time()

    def wall(self) -> float:
        return time.time()

    def boot_id(self) -> str:
        return ""


SYSTEM_CLOCK = SystemClock()
