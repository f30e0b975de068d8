"""Bridge hardening end to end (issue 9): a CPython stand-in board (tests/e2e/fake_board.py) that misbehaves on
purpose -> pty -> ``touchmove run`` -> a private Mosquitto -> a subscriber. Each test counts the plies played,
published on MQTT, in the journal and in ``touchmove export``. (The journal faults run with the real firmware:
test_journal_faults.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.helpers import (
    OPERA,
    REPO,
    Broker,
    Subscriber,
    exported_moves,
    game_moves,
    journal_moves,
    simple_timeline,
    start_daemon,
    unique_moves,
    write_config,
    write_timeline,
)
from touchmove.sim.ptyboard import PtyBoard

FAKE = REPO / "tests" / "e2e" / "fake_board.py"
MOVES = game_moves(OPERA)
WANT = [m.uci() for m in MOVES]
TIMELINE = simple_timeline(MOVES, think=700, hand=150)
SPEED = 5


class Hall:
    """Fake boards on ptys, the daemon and a subscriber, for one test."""

    def __init__(self, tmp: Path, broker: Broker) -> None:
        self.tmp = tmp
        self.broker = broker
        self.timeline = write_timeline(tmp / "t.jsonl", TIMELINE)
        self.journal = tmp / "j.sqlite3"
        self.sub = Subscriber(broker.port)
        self.boards: list[PtyBoard] = []
        cfg = write_config(tmp / "c.toml", broker_port=broker.port, ports=[str(tmp / "board*")],
                           journal=self.journal, settle_ms=150, rescan_s=0.3)
        self.daemon: subprocess.Popen[bytes] = start_daemon(cfg, tmp / "daemon.log")
        self.sub.wait_for(lambda: self.sub.last("touchmove/bridge/state") is not None, 15, "bridge online")

    def board(self, name: str, board_id: str, *extra: str) -> PtyBoard:
        board = PtyBoard([sys.executable, str(FAKE), str(self.timeline), board_id, "--speed", str(SPEED), *extra],
                         str(self.tmp / name), env=None)
        board.plug()
        self.boards.append(board)
        return board

    def wait_game(self, board_id: str, timeout: float = 90) -> None:
        try:
            self.sub.wait_for(lambda: unique_moves(self.sub.events(board_id)) == WANT, timeout, "the whole game")
            self.sub.wait_for(lambda: any(e["type"] == "game_end" for e in self.sub.events(board_id)), 15,
                              "game_end")
        except AssertionError:
            raise AssertionError(f"{board_id}: {unique_moves(self.sub.events(board_id))}\n"
                                 f"{self.log()[-3000:]}") from None

    def plies(self, board_id: str) -> dict[str, int]:
        """Plies played, published, journaled and exported (the test stops the daemon first)."""
        return {"played": len(WANT), "published": len(unique_moves(self.sub.events(board_id))),
                "journaled": len(journal_moves(self.journal, board_id)),
                "exported": len(exported_moves(self.journal, board_id, self.tmp))}

    def stop(self) -> None:
        if self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(15)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
        for board in self.boards:
            board.stop()
        self.sub.close()

    def log(self) -> str:
        return (self.tmp / "daemon.log").read_text(errors="replace")


@pytest.fixture
def hall(tmp_path: Path, broker: Broker):
    h = Hall(tmp_path, broker)
    yield h
    h.stop()


def full_counts(n: int) -> dict[str, int]:
    return {"played": n, "published": n, "journaled": n, "exported": n}


def test_out_of_range_numbers_are_errors_and_change_nothing(hall: Hall) -> None:
    bad = [{"type": "lift", "sq": "a2", "t": 10**20, "seq": 9999}, {"type": "place", "sq": "a2", "t": 5, "seq": 10**20},
           {"type": "button", "id": "clock_white", "t": 2**63, "seq": 7}, {"type": "snapshot", "occ": "-1", "t": 5},
           {"type": "clock", "side": "white", "remaining": 10**30, "t": 9}, {"type": "lift", "sq": "e2", "t": -3}]
    at = TIMELINE[len(TIMELINE) // 3]["t"]
    inject = [f"--inject={at + i}:{json.dumps(line)}" for i, line in enumerate(bad)]
    hall.board("board1", "fake1", *inject).start()
    hall.wait_game("fake1")
    hall.stop()
    assert hall.plies("fake1") == full_counts(len(WANT))
    log = hall.log()
    assert log.count("ERROR touchmove.bridge: fake1: line with an out-of-range number skipped") == len(bad) - 1
    assert "Traceback" not in log and "OverflowError" not in log


def test_time_running_backwards_within_a_boot_is_absorbed(hall: Hall) -> None:
    third = TIMELINE[len(TIMELINE) // 3]["t"]
    two_thirds = TIMELINE[2 * len(TIMELINE) // 3]["t"]
    hall.board("board1", "fake1", f"--time-warp={third}:{third // 2}", f"--time-warp={two_thirds}:3000").start()
    hall.wait_game("fake1")
    hall.stop()
    assert hall.plies("fake1") == full_counts(len(WANT))
    assert hall.log().count("device time ran backwards") == 2


def test_a_board_that_changes_its_id_keeps_its_port_and_game(hall: Hall) -> None:
    at = TIMELINE[len(TIMELINE) // 2]["t"]
    hall.board("board1", "fake1", f"--rehello={at}:intruder", f"--rehello={at + 5000}:intruder").start()
    hall.wait_game("fake1")
    alerts = [e for e in hall.sub.events("fake1") if e["type"] == "alert" and e["code"] == "board_identity"]
    assert len(alerts) == 1 and alerts[0]["detail"]["claimed"] == "intruder"
    assert hall.sub.events("intruder") == []
    state = hall.sub.last("touchmove/bridge/state")
    assert state is not None and state.json()["problems"][0]["code"] == "board_identity"
    hall.stop()
    assert hall.plies("fake1") == full_counts(len(WANT))


def test_two_boards_with_one_id_do_not_flap_and_both_games_survive_the_fix(hall: Hall) -> None:
    first = hall.board("board1", "twin")
    first.start()
    hall.sub.wait_for(lambda: len(unique_moves(hall.sub.events("twin"))) >= 2, 30, "the first board playing")
    second = hall.board("board2", "twin")
    second.start()
    hall.wait_game("twin")
    alerts = [e for e in hall.sub.events("twin") if e["type"] == "alert" and e["code"] == "board_identity"]
    assert len(alerts) == 1 and alerts[0]["detail"]["held_by"].endswith("board1")
    log = hall.log()
    assert "now on" not in log and log.count(" opened") == 2 and " closed" not in log   # no flapping
    # the operator gives the second board its own id and plugs it in again: its game is played under it
    second.kill()
    second.unplug()
    second.argv[3] = "single"
    second.plug()
    second.start()
    hall.wait_game("single")
    hall.stop()
    assert hall.plies("twin") == full_counts(len(WANT))
    assert hall.plies("single") == full_counts(len(WANT))
