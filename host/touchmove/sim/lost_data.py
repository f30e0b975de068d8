"""Lost data, as a tournament hall makes it: every record of a window mid-game lost, then a snapshot.

A cable pulled for a moment, a USB hub reset: the board's lines in between never reach the host, and the firmware
sends its hello and a full snapshot when the link is back. :func:`lose_window` does that to a recording made by
:mod:`touchmove.sim.hands`; :func:`lost_game` plays a game so and tells what its lost window is (:func:`classify`),
for the tests and ``bench/lost_data.py``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import chess

from touchmove.records import Clock, Record, Snapshot
from touchmove.rules import Engine
from touchmove.rules.recovery import explanations
from touchmove.sim.hands import Hands, Style, occupancy_after

#: How long a board stays blind: 0.5 to 8 s.
WINDOW_MS = (500, 8000)
#: What a lost window is (:func:`classify`), in the order the benchmark reports them.
WINDOW_KINDS = ("nothing to recover", "one explanation", "several explanations", "shorter than the truth",
                "no legal sequence", "search gave up")


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
        occ = occupancy_after(occ, record)
        if start <= record.t < end:
            dropped += 1
        else:
            out.append(record)
    if shown is None:
        shown = occ
        out.append(Snapshot(end, shown))
    return out, LostWindow(start, end, dropped, shown)


@dataclass(frozen=True)
class LostGame:
    """A game played by the modelled hands with one window lost: what the engine gets, the window, and its kind
    (one of :data:`WINDOW_KINDS`)."""

    recording: list[Record]
    window: LostWindow
    kind: str
    #: the plies really made in the window (the last one may be under way at its end)
    lost_plies: int = 0
    #: the position the engine was sure of when the window began (None: nothing to recover)
    sure: chess.Board | None = None


def lost_game(board: chess.Board, moves: list[chess.Move], rng: random.Random,
              style: Style | None = None, window_ms: tuple[int, int] = WINDOW_MS) -> LostGame:
    """Play ``moves`` from ``board`` with hands of ``style`` drawn from ``rng``, lose a window of ``window_ms``,
    classify it."""
    hands = Hands(rng, style or Style())
    starts = play_timed(board, moves, hands)
    recording, window = lose_window(hands.records, board.occupied, rng, window_ms)
    kind, lost, sure = classify_window(board, moves, starts, hands.records, window)
    return LostGame(recording, window, kind, lost, sure)


def play_timed(board: chess.Board, moves: list[chess.Move], hands: Hands) -> list[int]:
    """Play the moves with ``hands``; return the device time of each move's first record (the previous move's
    clock press, written when the next record comes, is not part of it)."""
    board = board.copy()
    starts = []
    for move in moves:
        first = len(hands.records)
        hands.move(board, move)
        starts.append(next(r.t for r in hands.records[first:] if not isinstance(r, Clock)))
        board.push(move)
    return starts


def classify(board: chess.Board, moves: list[chess.Move], starts: list[int], recording: list[Record],
             window: LostWindow) -> str:
    """Return what the lost window is (see :func:`classify_window`)."""
    return classify_window(board, moves, starts, recording, window)[0]


def classify_window(board: chess.Board, moves: list[chess.Move], starts: list[int], recording: list[Record],
                    window: LostWindow) -> tuple[str, int, chess.Board | None]:
    """Return what the lost window is (:data:`WINDOW_KINDS`): nothing to recover, one explanation (the plies
    really lost are the only legal sequence of that length or shorter), several, a shorter one than the truth,
    none found, or a search that gave up; with the number of plies really made in the window and the position the
    engine was sure of (None: nothing to recover). ``recording`` is the whole recording, ``starts`` each move's
    first record (:func:`play_timed`)."""
    engine = Engine(fen=board.fen(), chess960=board.chess960)
    for record in recording:
        if record.t >= window.start:
            break
        engine.feed(record)
    engine.advance(window.end)
    sure = engine.games[-1].board()
    # The plies begun before the snapshot, after the sure position (the last one may be under way).
    truth = moves[len(engine.games[-1].moves):sum(1 for t in starts if t < window.end)]
    if sure.occupied == window.occ:
        return "nothing to recover", len(truth), None
    found = explanations(sure, window.occ)
    if found is None:
        return "search gave up", len(truth), sure
    if not found:
        return "no legal sequence", len(truth), sure
    if any(len(e.moves) + e.in_progress < len(truth) for e in found):
        return "shorter than the truth", len(truth), sure
    return ("one explanation" if len(found) == 1 else "several explanations"), len(truth), sure
