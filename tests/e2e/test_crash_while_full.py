"""A crash while the journal's disk is full loses nothing (issue 21): see tests/e2e/crash_while_full.py. One run
on tmpfs here; ``bench/crash_while_full.py`` makes 20 and more on tmpfs and ext4."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.e2e.crash_while_full import WANT, CrashRun, can_mount, crash_while_full, matching, reordered


def test_a_crash_while_the_disk_is_full_loses_nothing_and_reuses_no_seq(tmp_path: Path) -> None:
    why = can_mount("tmpfs")
    if why is not None:
        if os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1":
            pytest.fail(why)
        pytest.skip(why)
    run = crash_while_full(tmp_path, "tmpfs", random.Random(21))
    print(run)
    assert run.journaled_at_crash < run.plies_at_crash      # the crash did lose journal writes
    assert run.restarted and run.reused_seqs == 0 and run.reordered == 0
    assert (run.played, run.published, run.journaled, run.exported) == (33, 33, 33, 33), run


def test_a_crash_right_after_plies_the_board_cannot_order_gives_the_game_back_in_the_order_published(
        tmp_path: Path) -> None:
    """The disk fills once 14 plies are published; Nc3 c6 Bg5 are published from memory, never journaled, and the
    bridge is killed. Bg5 c6 Nc3 reach the same position, which the board's snapshot cannot tell apart: the
    restart took that usual order and rewrote the game on MQTT (9 of 40 bench runs, 2026-12-02). It now reads the
    plies it had published back from the broker's retained PGN and takes their order."""
    why = can_mount("tmpfs")
    if why is not None:
        if os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1":
            pytest.fail(why)
        pytest.skip(why)
    run = crash_while_full(tmp_path, "tmpfs", random.Random(21), fill_at=14, kill_at=17)
    print(run)
    assert run.journaled_at_crash <= 14 and run.plies_at_crash >= 17     # Nc3 c6 Bg5 published, not journaled
    assert run.restarted and run.reused_seqs == 0
    assert run.reordered == 0, run                                       # in the order played, everywhere
    assert (run.played, run.published, run.journaled, run.exported) == (33, 33, 33, 33), run


def test_a_game_recovered_in_another_order_is_counted_whole_and_the_order_apart() -> None:
    """bench/crash_while_full.py's run 2 (seed 0): the restart recovered Bg5 c6 Nc3 for Nc3 c6 Bg5 (the same
    position; the board cannot tell them apart) and went on to the end; the harness counted that game as 0 plies
    published, journaled and exported, and waited its 120 s for the game as played."""
    transposed = [*WANT[:14], "c1g5", "c7c6", "b1c3", *WANT[17:]]
    assert matching(transposed) == len(WANT) == 33 and reordered(transposed) == 2
    assert matching(transposed[:17]) == 17 and reordered(transposed[:17]) == 2       # a prefix, transposed
    assert matching(transposed[:15]) == 0 and reordered(transposed[:15]) == 0        # Bg5 for Nc3: not the game
    assert matching(WANT[:20]) == 20 and reordered(WANT[:20]) == 0
    illegal = [*WANT[:14], "b1c3", "c7c6", "c1g5", *WANT[17:]][::-1]
    assert matching(illegal) == 0 and reordered(illegal) == 0
    run = CrashRun("tmpfs", 33, 33, 33, 33, 0, 17, 13, True, 1.0, reordered=2)
    assert not run.lost_nothing()                       # the game as played was not given back
    assert CrashRun("tmpfs", 33, 33, 33, 33, 0, 17, 13, True, 1.0).lost_nothing()
