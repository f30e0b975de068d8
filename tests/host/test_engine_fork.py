"""A fork of the engine (one hypothesis about plies not seen made) shares nothing its parent changes in place.

``BoardState.fork`` shares the fields of ``SHARED_FIELDS`` (never changed in place) and copies those of
``COPIED_FIELDS``; these tests fail if a field changed in place were shared, or a shared one could be changed in
place, or a field were in neither list.
"""

from __future__ import annotations

from collections import deque
from enum import Enum

import chess

from touchmove.records import Clock, Lift, Place
from touchmove.rules import Engine
from touchmove.rules.board_state import COPIED_FIELDS, SHARED_FIELDS, STATE_FIELDS
from touchmove.rules.footprints import Position

#: Values that are never changed in place (chess.Move is python-chess's value of a move).
IMMUTABLE = (int, str, bytes, float, bool, type(None), Enum, chess.Move)


def mid_game() -> Engine:
    """An engine two plies into a game, the third under way: a last move to re-read, lifts seen, a move pending,
    a change still held by the chatter filter."""
    engine = Engine(settle_ms=200)
    t = 1000
    for src, dst, white in ((chess.E2, chess.E4, True), (chess.E7, chess.E5, False)):
        engine.feed(Lift(t, src))
        engine.feed(Place(t + 300, dst))
        engine.feed(Clock(t + 400, white, None))
        t += 1000
    engine.feed(Lift(t, chess.G1))
    engine.feed(Place(t + 300, chess.F3))
    engine.feed(Lift(t + 330, chess.A7))  # held by the chatter filter
    return engine


def mutable_parts(value: object) -> dict[int, object]:
    """Return every object reachable from ``value`` that could be changed in place, by id (game positions are
    never changed in place, and are left out)."""
    found: dict[int, object] = {}
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (*IMMUTABLE, Position, chess.Board)) or id(item) in found:
            continue
        if isinstance(item, tuple | frozenset):
            stack.extend(item)
            continue
        found[id(item)] = item
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | set | deque):
            stack.extend(item)
        else:
            names = set(getattr(item, "__dict__", {}))
            for cls in type(item).__mro__:
                names.update(getattr(cls, "__slots__", ()))
            stack.extend(getattr(item, name) for name in names if hasattr(item, name))
    return found


def test_the_fields_listed_are_the_engines_state() -> None:
    engine = mid_game()
    assert not set(SHARED_FIELDS) & set(COPIED_FIELDS)
    assert set(STATE_FIELDS) == set(SHARED_FIELDS) | set(COPIED_FIELDS)
    # Every field of the engine is listed (its unseen play a fork gets new).
    assert set(vars(engine._state)) - {"unseen"} == set(STATE_FIELDS)


def test_the_shared_fields_hold_nothing_changed_in_place() -> None:
    engine = mid_game()
    for name in SHARED_FIELDS:
        assert not mutable_parts(getattr(engine._state, name)), name


def test_a_fork_and_its_parent_share_nothing_changed_in_place() -> None:
    engine = mid_game()
    assert (engine._state.previous is not None and engine._state.evidence.lifts
            and engine._state.pending.match is not None)
    assert engine._state.chatter.pending(engine._state.occ) != engine._state.occ  # (a change held)
    fork = engine.fork()
    for name in STATE_FIELDS:
        ours, theirs = mutable_parts(getattr(engine._state, name)), mutable_parts(getattr(fork._state, name))
        shared = ours.keys() & theirs.keys()
        assert not shared, f"{name}: {[type(ours[i]).__name__ for i in shared]}"
    # What two fields share, the fork's copies share too: the last game is the line's record.
    assert fork._state.line.record is fork._state.games[-1]
    # The game position is shared: it is replaced, never changed.
    assert fork._state.position is engine._state.position


def test_play_on_a_fork_leaves_its_parent_as_it_was() -> None:
    engine = mid_game()
    before = (engine.state(), list(engine._state.games[-1].moves), list(engine._state.evidence.lifts),
              engine._state.pending.match, engine._state.chatter.pending(engine._state.occ),
              dict(engine._state.line.promotions))
    fork = engine.fork()
    fork.feed(Place(3400, chess.A7))
    fork.feed(Clock(3500, True, None))
    fork.feed(Lift(4000, chess.B8))
    fork.feed(Place(4300, chess.C6))
    fork.advance(5000)
    assert [m.uci() for m in fork.games[-1].moves] == ["e2e4", "e7e5", "g1f3", "b8c6"]
    after = (engine.state(), list(engine._state.games[-1].moves), list(engine._state.evidence.lifts),
             engine._state.pending.match, engine._state.chatter.pending(engine._state.occ),
             dict(engine._state.line.promotions))
    assert after == before
