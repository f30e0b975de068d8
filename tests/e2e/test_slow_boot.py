"""A board whose port appears long before its program runs (a Pico enumerates on USB, then boots for seconds on a
slow host or a loaded one): the bridge asks it for a hello, but not at every rescan, and the hellos the board
answers late cost no snapshot flood. The real firmware (MicroPython), `touchmove run`, a private Mosquitto.

Before the fix the bridge wrote a hello command every rescan (0.2 s here) and asked for a snapshot at every hello
answered: an emulated Pico that booted in a minute on a loaded CI machine answered ~300 of them while its first
moves were played, its output filled, events were dropped for snapshots, and a bishop's slide was published as
three moves (c8f5 f5d7 d7g4 for c8g4)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.helpers import OPERA, game_moves, simple_timeline
from tests.e2e.rig import Rig

BOOT_S = 6.0      # the port is there this long before the firmware runs
RESCAN_S = 0.2    # the rig's rescan interval


def commands(rig: Rig, name: str) -> int:
    return sum(1 for line in rig.board.commands if f'"cmd":"{name}"' in line.decode(errors="replace"))


def test_a_board_booting_slowly_is_asked_hello_rarely_and_plays_the_whole_game(tmp_path: Path) -> None:
    moves = game_moves(OPERA)
    rig = Rig(tmp_path, simple_timeline(moves, think=700, hand=150), speed=5)
    rig.board.queue_before_start = True     # what the host writes meanwhile waits for the program, as on USB
    try:
        rig.start_host()
        rig.board.plug()
        time.sleep(BOOT_S)
        asked = commands(rig, "hello")
        # One at the port's opening, then one every 2 s at most (not one every rescan: 30 in 6 s).
        assert 1 <= asked <= BOOT_S / 2 + 1, f"{asked} hello commands in {BOOT_S} s"
        rig.board.start()
        counts = rig.assert_full_game(moves)
        assert counts["duplicates"] == 0
        # The firmware answers each queued hello with a hello and a snapshot; the bridge asks for one more
        # snapshot only when it binds the board, not at every late answer.
        assert commands(rig, "snapshot") <= 2, rig.board.commands
        assert rig.daemon_log().count("(same boot)") == 0
    finally:
        rig.stop()
