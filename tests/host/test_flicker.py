"""A square flickering faster than any hand: coalesced until quiet, its start said once (touchmove.bridge.flicker)."""

from __future__ import annotations

import chess

from touchmove.bridge.flicker import FLICKER_CHANGES, FLICKER_QUIET_MS, SquareFlicker
from touchmove.records import Lift, Place


def test_hands_are_never_a_flicker() -> None:
    flick = SquareFlicker()
    t = 0.0
    for i in range(200):                        # lifted and put back every 150 ms for 30 s: a nervous hand
        record = Lift(int(t), chess.E2) if i % 2 == 0 else Place(int(t), chess.E2, "P")
        assert flick.take(record, t) == (True, None)
        t += 150
    assert not flick.flickering


def test_a_flicker_is_held_and_its_last_state_told_once_quiet() -> None:
    flick = SquareFlicker()
    passed, starts = 0, []
    for i in range(1001):                       # 50 changes a second for 20 s, ending empty
        record = Lift(i * 20, chess.E2) if i % 2 == 0 else Place(i * 20, chess.E2, "P")
        goes_on, started = flick.take(record, i * 20.0)
        passed += goes_on
        if started is not None:
            starts.append(started)
    assert passed == FLICKER_CHANGES and len(starts) == 1
    assert flick.quiet(20_000 + FLICKER_QUIET_MS - 1, 5) == []
    (sq, ended, record), = flick.quiet(20_000 + FLICKER_QUIET_MS, 99)
    assert sq == chess.E2 and ended.held == 1001 - FLICKER_CHANGES
    assert record == Lift(99, chess.E2)        # the last told was a place: the square's empty state goes on
    assert not flick.flickering


def test_a_flicker_ending_as_it_began_tells_nothing_more() -> None:
    flick = SquareFlicker()
    for i in range(FLICKER_CHANGES + 2):      # ends on a place, as the last change told
        flick.take(Lift(i * 10, chess.D4) if i % 2 == 0 else Place(i * 10, chess.D4, "N"), i * 10.0)
    flick.take(Lift(500, chess.D4), 500.0)
    flick.take(Place(510, chess.D4, "N"), 510.0)
    told = flick.told[chess.D4]
    assert isinstance(told, Place)
    (_, _, record), = flick.quiet(510 + FLICKER_QUIET_MS, 1000)
    assert record is None


def test_a_change_read_late_is_not_the_end_of_its_own_flicker() -> None:
    """The host stalled 2 s while e2 flickered on: the next change of e2 read is no sign that e2 was quiet (the
    changes waited in the port), so the flicker goes on, held, and no second one starts."""
    flick = SquareFlicker()
    starts = 0
    for i in range(FLICKER_CHANGES + 10):
        record = Lift(i * 20, chess.E2) if i % 2 == 0 else Place(i * 20, chess.E2, "P")
        starts += flick.take(record, i * 20.0)[1] is not None
    late = FLICKER_CHANGES * 20 + 200 + 2000.0
    assert flick.quiet(late, 5, changing=chess.E2) == []
    for i in range(FLICKER_CHANGES + 10):
        record = Lift(int(late), chess.E2) if i % 2 == 0 else Place(int(late), chess.E2, "P")
        goes_on, started = flick.take(record, late + i)
        assert not goes_on
        starts += started is not None
    assert starts == 1 and chess.E2 in flick.flickering
    assert [sq for sq, _, _ in flick.quiet(late + 100 + FLICKER_QUIET_MS, 9)] == [chess.E2]
