"""Lost data, as a tournament hall makes it: every record of a window mid-game lost, then a snapshot.

A cable pulled for a moment, a USB hub reset: the board's lines in between never reach the host, and the firmware
sends its hello and a full snapshot when the link is back. :func:`lose_window` does that to a recording made by
:mod:`touchmove.hands` (used by the tests and ``bench/lost_data.py``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import chess

from touchmove.records import Lift, Place, Record, Snapshot

#: How long a board stays blind: 0.5 to 8 s.
WINDOW_MS = (500, 8000)


@dataclass(frozen=True)
class LostWindow:
    """The device times ``start`` (included) to ``end`` (excluded) whose records were lost, and how many."""

    start: int
    end: int
    dropped: int
    occ: chess.Bitboard  # what the snapshot at ``end`` shows


def lose_window(records: list[Record], occ: chess.Bitboard, rng: random.Random,
                window_ms: tuple[int, int] = WINDOW_MS) -> tuple[list[Record], LostWindow]:
    """Return ``records`` with every record of a random window mid-game dropped and a snapshot at its end.

    ``occ`` is the occupancy before the first record. The window starts somewhere in the middle three fifths of
    the recording and lasts ``window_ms`` (drawn uniformly); the snapshot shows the occupancy at its end, as the
    firmware reports it on reconnection.
    """
    if not records:
        return [], LostWindow(0, 0, 0, occ)
    first, last = records[0].t, records[-1].t
    span = last - first
    start = first + int(span * rng.uniform(0.2, 0.8))
    end = start + rng.randint(*window_ms)
    out: list[Record] = []
    dropped = 0
    shown: chess.Bitboard | None = None
    for record in records:
        if record.t >= end and shown is None:
            shown = occ
            out.append(Snapshot(end, shown))
        if isinstance(record, Lift):
            occ &= ~chess.BB_SQUARES[record.sq]
        elif isinstance(record, Place):
            occ |= chess.BB_SQUARES[record.sq]
        elif isinstance(record, Snapshot):
            occ = record.occ
        if start <= record.t < end:
            dropped += 1
        else:
            out.append(record)
    if shown is None:
        shown = occ
        out.append(Snapshot(end, shown))
    return out, LostWindow(start, end, dropped, shown)
