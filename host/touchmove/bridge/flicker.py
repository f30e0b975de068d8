"""A square that flickers faster than any hand (a failing sensor, a piece rocking on a reed switch, a vendor
board misreading one square over and over): its changes are coalesced before the journal and the engine.

Pure (no I/O): :class:`SquareFlicker` takes each ``lift``/``place`` of a board with the host's time and says
whether it goes on to the journal and the engine. A square changed more than :data:`FLICKER_CHANGES` times
within :data:`FLICKER_WINDOW_MS` is *flickering*: its further changes are held (counted, the last kept) until
it has been quiet for :data:`FLICKER_QUIET_MS`; then its last state, when it is not the one told last, goes on
as one record. The start of each flicker is an alert (``square_flicker``, raised by the bridge) naming the
square; hands are never that fast, so no move is lost (a move made on the square meanwhile is read once it is
quiet, from its last state).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace

from touchmove.records import Lift, Place

#: More changes of one square than this within :data:`FLICKER_WINDOW_MS` is a flicker: a hand lifting and
#: setting down a piece on one square manages a few a second.
FLICKER_CHANGES = 20
FLICKER_WINDOW_MS = 1000
#: A flickering square is quiet again once unchanged this long (ms).
FLICKER_QUIET_MS = 1000


@dataclass(slots=True)
class Flicker:
    """One square's flicker: since when (host ms), the changes held, the last of them, and when it was."""

    since: float
    held: int = 0
    last: Lift | Place | None = None
    last_at: float = 0.0


@dataclass
class SquareFlicker:
    """The flickers of one board's squares (see the module)."""

    #: Each square's recent change times (host ms), at most :data:`FLICKER_CHANGES` + 1.
    recent: dict[int, deque[float]] = field(default_factory=dict)
    #: The squares flickering now.
    flickering: dict[int, Flicker] = field(default_factory=dict)
    #: Each square's last change told on (the journal and the engine saw it).
    told: dict[int, Lift | Place] = field(default_factory=dict)

    def take(self, record: Lift | Place, now_ms: float) -> tuple[bool, Flicker | None]:
        """Take one change at host time ``now_ms``; return whether it goes on, and the flicker it starts (for
        its alert), if any."""
        sq = record.sq
        flicker = self.flickering.get(sq)
        if flicker is not None:
            flicker.held += 1
            flicker.last, flicker.last_at = record, now_ms
            return False, None
        times = self.recent.setdefault(sq, deque(maxlen=FLICKER_CHANGES + 1))
        times.append(now_ms)
        if len(times) > FLICKER_CHANGES and now_ms - times[0] <= FLICKER_WINDOW_MS:
            times.clear()
            started = self.flickering[sq] = Flicker(now_ms, 1, record, now_ms)
            return False, started
        self.told[sq] = record
        return True, None

    def quiet(self, now_ms: float, t: int,
              changing: int | None = None) -> list[tuple[int, Flicker, Lift | Place | None]]:
        """End the flickers quiet for :data:`FLICKER_QUIET_MS` at host time ``now_ms``; return each one's square,
        the flicker and the record that tells its last state at board time ``t`` (None: the state told last
        stands). ``changing``: the square of the change being read now, never quiet (read late after the host
        stalled, it was made while the square still flickered)."""
        out: list[tuple[int, Flicker, Lift | Place | None]] = []
        for sq, flicker in list(self.flickering.items()):
            if now_ms - flicker.last_at < FLICKER_QUIET_MS or sq == changing:
                continue
            del self.flickering[sq]
            last, told = flicker.last, self.told.get(sq)
            record = None
            if last is not None and (told is None or replace(last, t=0) != replace(told, t=0)):
                record = replace(last, t=t)
                self.told[sq] = record
            out.append((sq, flicker, record))
        return out
