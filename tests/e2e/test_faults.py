"""End to end with real parts, and the faults of issue 4: firmware (MicroPython, sim driver) -> pty -> daemon
-> Mosquitto -> subscriber. Each test ends with the full game on MQTT and in the journal."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import chess
import pytest

from tests.e2e.helpers import OPERA, REPO, game_moves, simple_timeline
from tests.e2e.rig import Rig

MOVES = game_moves(OPERA)
# Slow hands (a long think, a piece held 0.8 s) so a fault lands between two records for sure; speed 10.
TIMELINE = simple_timeline(MOVES, t0=2000, think=5000, hand=800)
SPEED = 10


@pytest.fixture
def rig(tmp_path: Path):
    r = Rig(tmp_path, TIMELINE, speed=SPEED, persistent_broker=True)
    yield r
    r.stop()


def test_pty_closed_mid_move_and_reopened(rig: Rig) -> None:
    sub = rig.start()
    rig.wait_moves(9)
    # the 10th move's piece is lifted: pull the cable while it is in the air
    sub.wait_for(lambda: any(e["type"] == "touch" and e["ply"] == 10 for e in rig.events()), 30, "ply 10 lifted")
    rig.board.unplug()
    time.sleep(0.25)          # the piece lands (0.8 s device = 0.08 s here) while the board is unplugged
    rig.board.plug()
    rig.assert_full_game(MOVES)
    log = rig.daemon_log()
    assert "closed" in log and "same boot" in log


def test_broker_stopped_and_restarted_mid_game(rig: Rig) -> None:
    rig.start()
    rig.wait_moves(8)
    rig.broker.stop()
    # the subscriber's session (clean_session false) outlives the broker: the moves the bridge sends again
    # wait there for it, whichever of the two reconnects first
    assert (rig.tmp / "mq" / "mosquitto.db").exists(), "the broker kept no sessions"
    time.sleep(2.0)           # two moves are made while the broker is away
    rig.broker.start()
    rig.assert_full_game(MOVES)


def test_daemon_killed_and_restarted(rig: Rig) -> None:
    rig.start()
    rig.wait_moves(12)
    rig.kill_daemon()
    time.sleep(1.0)           # the board goes on playing; its lines wait in the serial buffer
    rig.start_daemon()
    rig.assert_full_game(MOVES)
    assert rig.daemon_log().count("resumed") == 1


def test_daemon_killed_while_another_program_takes_its_port(rig: Rig) -> None:
    """Issue 40: after ``kill -9`` another program (ModemManager probing, a stray bridge whose old symlink now
    names this pty) locks the port before the restarted bridge opens it. The bridge says who holds it, retries,
    and takes the port back the moment it is let go: nothing of the game is lost."""
    rig.start()
    rig.wait_moves(12)
    rig.kill_daemon()
    holder = os.open(rig.link, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)     # what pyserial's exclusive open takes
        rig.start_daemon()
        deadline = time.monotonic() + 30
        while f"locked by another program (pid {os.getpid()}" not in rig.daemon_log():
            assert time.monotonic() < deadline, rig.daemon_log()[-2000:]
            time.sleep(0.1)
        time.sleep(1.0)                                          # a few rescans refused
    finally:
        os.close(holder)
    rig.assert_full_game(MOVES)
    log = rig.daemon_log()
    assert "got it back (it was refused: locked by another program" in log, log[-2000:]
    assert log.count("resumed") == 1


def test_a_bridge_a_test_started_dies_with_the_test_process(tmp_path: Path) -> None:
    """Issue 40's likely cause: a bridge outliving a killed test run holds later tests' ptys. The daemons the
    tests start (helpers.start_daemon) get SIGKILL when the test process dies."""
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time\nfrom tests.e2e.helpers import dies_with_parent\n"
         "child = subprocess.Popen(dies_with_parent(['/bin/sleep', '120']))\n"
         "time.sleep(0.5)\nprint(child.pid, flush=True)\ntime.sleep(120)\n"], cwd=REPO, stdout=subprocess.PIPE,
        text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait(5)
    def alive() -> bool:
        try:
            return Path(f"/proc/{child}/stat").read_text().split()[2] != "Z"
        except (OSError, IndexError):
            return False

    deadline = time.monotonic() + 5
    try:
        while alive():
            assert time.monotonic() < deadline, "the child outlived its parent"
            time.sleep(0.05)
    finally:
        if alive():
            os.kill(child, signal.SIGKILL)


def test_firmware_rebooted(rig: Rig) -> None:
    rig.start()
    plies = 14
    rig.wait_moves(plies)
    board = chess.Board()
    for move in MOVES[:plies]:
        board.push(move)
    # the records after ply 14 (each move starts with a 5 s think, so we are inside it)
    done = len(simple_timeline(MOVES[:plies], t0=2000, think=5000, hand=800))
    last_t = TIMELINE[done - 1]["t"]
    remaining = [dict(r, t=r["t"] - last_t) for r in TIMELINE[done:]]
    rig.reboot_board(remaining, int(board.occupied))
    rig.assert_full_game(MOVES)
    assert rig.daemon_log().count(": boot ") == 2
