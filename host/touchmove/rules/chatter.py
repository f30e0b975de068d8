"""Sensor chatter filter: a square that flips and flips back within a few milliseconds did not change.

Each square change is held for ``window_ms`` of device time; a change reverted within that time is dropped
together with its reversal (a square emptied and filled again is noted in :attr:`ChatterFilter.flicks`: a piece
swapped for another faster than the window, a capture's victim for the capturing piece, looks so too). Changes
come out in order with their original times, so the rules engine's settle clock is unaffected; only touch
reports wait for the window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import chess

DEFAULT_CHATTER_MS = 25

#: One square change: device time, square, whether it is occupied now.
Change = tuple[int, chess.Square, bool]


class ChatterFilter:
    """Holds square changes until they have lasted ``window_ms``."""

    def __init__(self, window_ms: int = DEFAULT_CHATTER_MS) -> None:
        self.window_ms = window_ms
        self._held: deque[Change] = deque()
        #: The squares that emptied and filled again within the window since the owner last took them (device
        #: times of the emptying and of the filling, square).
        self.flicks: list[tuple[int, int, chess.Square]] = []

    def push(self, t: int, sq: chess.Square, occupied: bool) -> Sequence[Change]:
        """Take one change; return the changes that are now certain (older than the window), oldest first."""
        out = self.release(t)
        for i, (held_t, held_sq, held_occ) in enumerate(self._held):
            if held_sq == sq:
                if held_occ != occupied:
                    del self._held[i]  # flipped back: noise
                    if not held_occ:
                        self.flicks.append((held_t, t, sq))
                    return out
                break
        self._held.append((t, sq, occupied))
        return out

    def release(self, t: int) -> Sequence[Change]:
        """Return the held changes that have lasted the window by device time ``t``."""
        held = self._held
        if not held or held[0][0] + self.window_ms > t:
            return ()  # (most records release nothing: no list made)
        out = []
        while held and held[0][0] + self.window_ms <= t:
            out.append(held.popleft())
        return out

    def pending(self, occ: chess.Bitboard) -> chess.Bitboard:
        """Return the occupancy ``occ`` with the held changes applied (what the board shows now)."""
        for _, sq, occupied in self._held:
            occ = occ | chess.BB_SQUARES[sq] if occupied else occ & ~chess.BB_SQUARES[sq]
        return occ

    def flush(self) -> list[Change]:
        """Return every held change (end of input, or a full snapshot replaces them)."""
        out = list(self._held)
        self._held.clear()
        return out

    def next_deadline(self) -> int | None:
        """Return when the oldest held change becomes certain, or None."""
        return self._held[0][0] + self.window_ms if self._held else None
