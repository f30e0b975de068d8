"""The piece timelines emulators play: written as JSON lines, read back, and sampled the way a scanning board
sees them.

A line is ``{"t": ms, "sq": "e2", "piece": "P"}`` (``"piece": null``: the square empties) or
``{"t": ms, "clock": "white", "remaining": ms}`` (a clock press).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path

import chess

from touchmove.sim.pieces import Change, ClockPress, Event


def write(path: Path, events: Iterable[Event]) -> Path:
    """Write a timeline; return its path."""
    with open(path, "w", encoding="utf-8") as fh:
        for e in events:
            if isinstance(e, Change):
                fh.write(json.dumps({"t": e.t, "sq": chess.square_name(e.sq), "piece": e.piece}) + "\n")
            else:
                fh.write(json.dumps({"t": e.t, "clock": "white" if e.side else "black",
                                     "remaining": e.remaining}) + "\n")
    return path


def read(path: Path) -> list[Event]:
    """Read a timeline written by :func:`write`."""
    out: list[Event] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if "clock" in obj:
            out.append(ClockPress(int(obj["t"]), obj["clock"] == "white", obj.get("remaining")))
        else:
            out.append(Change(int(obj["t"]), chess.parse_square(obj["sq"]), obj["piece"]))
    return out


def scan(start: list[str | None], events: list[Event], period_ms: tuple[float, float], rng: random.Random,
         order: list[int] | None = None, until: int | None = None) -> list[tuple[int, int, str | None]]:
    """Return what a board scanning its squares one by one reports: ``(t, square, piece)`` for each square
    whose sampled content differs from its last sample.

    A scan takes ``period_ms`` (drawn per scan); square ``order[i]`` is sampled ``i/64`` of the way through. A
    piece lifted and put back between two samples of its square is never seen; two squares changed within a
    scan are reported in scanning order, whatever the order they changed in.
    """
    order = order or list(range(64))
    state = list(start)
    seen = list(start)
    changes = [e for e in events if isinstance(e, Change)]
    end = until if until is not None else (changes[-1].t + 2 * period_ms[1] if changes else 0)
    out: list[tuple[int, int, str | None]] = []
    i = 0
    t0 = 0.0
    while t0 <= end:
        period = rng.uniform(*period_ms)
        for k, sq in enumerate(order):
            ts = t0 + period * k / 64
            while i < len(changes) and changes[i].t <= ts:
                state[changes[i].sq] = changes[i].piece
                i += 1
            if state[sq] != seen[sq]:
                seen[sq] = state[sq]
                out.append((int(ts), sq, state[sq]))
        t0 += period
    return out
