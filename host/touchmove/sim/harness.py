"""A board emulator and its translator joined in one process on a simulated clock (no pty, no bridge): the
protocol path of ``touchmove run`` (emulator bytes -> frames -> adapter -> wire lines -> records) for the
tests and the benchmark over thousands of games. The end-to-end tests run the same parts on a pty through the
real bridge and broker.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import chess

from touchmove import records
from touchmove.boards import translator_for
from touchmove.boards.adapter import Content, board_fen
from touchmove.boards.base import Translator, encode_lines
from touchmove.serial.lines import FROM_BOARD_ADAPTER, DecodeError, decode
from touchmove.sim import hands
from touchmove.sim.pieces import ClockPress, Event, piece_timeline, start_pieces

#: Host time between the board writing a frame and the translator reading it (ms): a USB serial round trip.
TRANSPORT_MS = 2
#: How often the link's timer runs (ms), as :data:`touchmove.boards.link.TICK_S`.
TICK_MS = 100


class Emulator(Protocol):
    def due(self) -> int | None: ...
    def advance(self, now: float) -> bytes: ...


def emulator_for(protocol: str, start: chess.Board, events: list[Event], seed: int = 0,
                 **options: Any) -> Any:
    """Return the emulator of ``protocol`` playing ``events`` from ``start``."""
    pieces = start_pieces(start)
    if protocol == "dgt":
        from touchmove.sim.dgt import DgtEmulator

        return DgtEmulator(pieces, events, seed=seed, **options)
    if protocol == "chesslink":
        from touchmove.sim.scanning import ChessLinkEmulator

        return ChessLinkEmulator(pieces, events, seed=seed, **options)
    if protocol == "chessnut":
        from touchmove.sim.scanning import ChessnutEmulator

        return ChessnutEmulator(pieces, events, seed=seed, **options)
    raise ValueError(f"unknown protocol {protocol!r}")


def reply_to(emulator: Any, data: bytes) -> bytes:
    """Return the emulator's reply to bytes from the host."""
    if hasattr(emulator, "feed"):
        return bytes(emulator.feed(data))
    return b"".join(emulator.command(b) for b in data)


@dataclass
class Run:
    """What went through: the wire lines, the records, the translator, and ``reports``: the pieces the board's own
    reports showed (FEN piece placements, the board turned the right way), one for each report that changed
    them, before the adapter holds back or orders anything. A ChessLink or Chessnut status is one report
    (several squares changed in one scan come together); a DGT field update is one, and so is each entry of its
    move memory read back."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    records: list[records.Record] = field(default_factory=list)
    translator: Translator | None = None
    reports: list[str] = field(default_factory=list)


def run(protocol: str, start: chess.Board, events: list[Event], *, seed: int = 0,
        corrupt: Callable[[bytes], bytes] | None = None, **options: Any) -> Run:
    """Play ``events`` through the emulator and translator of ``protocol``; return what came out.

    ``corrupt`` may change the bytes the board sends (the framing tests)."""
    emulator = emulator_for(protocol, start, events, seed=seed, **options)
    if protocol == "dgt":
        from touchmove.boards import dgt

        dgt.MEMORIES.clear()    # each run is a bridge of its own: no board met before (its move memory unread)
    tr = translator_for(protocol, "sim")
    out = Run(translator=tr)

    def reported(board: Sequence[Content]) -> None:
        shown = board_fen(board)
        if not out.reports or out.reports[-1] != shown:
            out.reports.append(shown)

    tr.adapter.reported = reported
    now = 0

    def take(lines: list[dict[str, Any]]) -> None:
        out.lines += lines
        for raw in encode_lines(lines):
            try:
                msg = decode(raw, FROM_BOARD_ADAPTER)
            except DecodeError:
                continue
            if msg.kind == "hello":
                snapshot_bytes = tr.command({"cmd": "snapshot"}, now)
                deliver(reply_to(emulator, snapshot_bytes))
            if msg.record is not None:
                out.records.append(msg.record)

    def deliver(data: bytes) -> None:
        if corrupt is not None and data:
            data = corrupt(data)
        if data:
            lines = tr.feed(data, now + TRANSPORT_MS)
            back = tr.drain()             # written before the bridge answers the lines, as the link does
            if back:
                deliver(reply_to(emulator, back))
            take(lines)

    deliver(reply_to(emulator, tr.start(now)))
    drops = options.get("drops", ())
    last_event = max([e.t for e in events] + [d.start + d.length for d in drops], default=0) + 3000
    next_tick = TICK_MS
    while True:
        due = emulator.due()
        step = min(x for x in (due, next_tick) if x is not None)
        if step > last_event and due is None:
            break
        now = max(now, int(step))
        if hasattr(emulator, "now"):
            emulator.now = now            # the time its replies are made at (a link lost drops them)
        if due is not None and due <= now:
            deliver(emulator.advance(now))
        if now >= next_tick:
            next_tick += TICK_MS
            lines, back = tr.tick(now)
            take(lines)
            if back:
                deliver(reply_to(emulator, back))
        if now > last_event + 5000:
            break
    return out


def game_events(start: chess.Board, moves: list[chess.Move], seed: int,
                style: hands.Style | None = None) -> list[Event]:
    """Return the hand model's piece timeline of a game."""
    return piece_timeline(start, moves, random.Random(seed), style)


def clock_presses(events: list[Event]) -> int:
    """Return the number of clock presses in a timeline."""
    return sum(isinstance(e, ClockPress) for e in events)
