"""A test rig: the real firmware (MicroPython, sim driver) on a pty, `touchmove run` as a process, a private
Mosquitto, and a subscriber; with the faults the tests inject."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import chess

from tests.e2e.helpers import (
    REPO,
    Broker,
    Subscriber,
    require_binary,
    start_daemon,
    unique_moves,
    write_config,
    write_timeline,
)
from touchmove.sim.ptyboard import PtyBoard

BOARD_ID = "fw1"


def firmware_argv() -> list[str]:
    binary = require_binary("micropython", str(REPO / ".venv" / "bin" / "micropython"))
    return [binary, str(REPO / "firmware" / "main.py")]


class Rig:
    def __init__(self, tmp: Path, timeline: list[dict[str, Any]], *, speed: int = 10, persistent_broker: bool = False,
                 settle_ms: int = 200, journal: Path | None = None) -> None:
        self.tmp = tmp
        self.speed = speed
        self.timeline = timeline
        self.broker = Broker(tmp)
        if persistent_broker:
            (tmp / "mq").mkdir(exist_ok=True)
            self.broker.conf.write_text(self.broker.conf.read_text().replace(
                "persistence false", f"persistence true\npersistence_location {tmp / 'mq'}/"))
        self.journal = journal or tmp / "journal.sqlite3"
        self.link = tmp / "ttyBOARD0"
        self.config = write_config(tmp / "bridge.toml", broker_port=self.broker.port, ports=[str(tmp / "ttyBOARD*")],
                                   journal=self.journal, settle_ms=settle_ms, rescan_s=0.2)
        first = write_timeline(tmp / "t0.jsonl", timeline)
        self.board = PtyBoard(firmware_argv(), str(self.link), env=self._env(first), stderr=None)
        self.daemon: subprocess.Popen[bytes] | None = None
        self.sub: Subscriber | None = None

    def _env(self, timeline: Path) -> dict[str, str]:
        return dict(os.environ, TOUCHMOVE_SIM=str(timeline), TOUCHMOVE_SIM_SPEED=str(self.speed),
                    TOUCHMOVE_SIM_EXIT="0", TOUCHMOVE_BOARD=BOARD_ID)

    def start(self) -> Subscriber:
        sub = self.start_host()
        self.board.plug()
        self.board.start()
        return sub

    def start_host(self) -> Subscriber:
        """Start the broker, the subscriber and the bridge (no board yet); return the subscriber."""
        self.broker.start()
        self.sub = Subscriber(self.broker.port)
        self.start_daemon()
        self.sub.wait_for(lambda: self.sub is not None and self.sub.last("touchmove/bridge/state") is not None,
                          15, "the bridge online")
        return self.sub

    def start_daemon(self) -> None:
        self.daemon = start_daemon(self.config, self.tmp / "daemon.log")

    def kill_daemon(self) -> None:
        assert self.daemon is not None
        os.kill(self.daemon.pid, signal.SIGKILL)
        self.daemon.wait(5)

    def reboot_board(self, remaining: list[dict[str, Any]], occ: chess.Bitboard, name: str = "t1.jsonl") -> None:
        """Power-cycle the board; it comes back with the pieces where they stand and plays ``remaining``."""
        self.board.kill()
        recs = [{"t": 0, "type": "snapshot", "occ": f"{occ:016x}"}, *remaining]
        self.board.env = self._env(write_timeline(self.tmp / name, recs))
        self.board.start()

    def events(self) -> list[dict[str, Any]]:
        assert self.sub is not None
        return self.sub.events(BOARD_ID)

    def moves(self) -> list[str]:
        return unique_moves(self.events())

    def wait_moves(self, n: int, timeout: float = 60) -> None:
        assert self.sub is not None
        self.sub.wait_for(lambda: len(self.moves()) >= n, timeout, f"{n} moves")

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
        self.board.stop()
        if self.sub is not None:
            self.sub.close()
        self.broker.stop()

    def assert_full_game(self, expected: list[chess.Move], timeout: float = 90) -> dict[str, int]:
        """The whole game on MQTT (in order, seq without gaps) and in the journal, with nothing lost."""
        assert self.sub is not None
        want = [m.uci() for m in expected]
        try:
            self.sub.wait_for(lambda: self.moves() == want, timeout, "the whole game on MQTT")
            self.sub.wait_for(lambda: any(e["type"] == "game_end" for e in self.events()), 15, "game_end")
        except AssertionError:
            raise AssertionError(f"got {self.moves()}\nwant {want}\n{self.daemon_log()[-3000:]}") from None
        events = self.events()
        seqs = [e["seq"] for e in events]
        top = max(seqs)
        assert sorted(set(seqs)) == list(range(1, top + 1)), "a gap in the event seq"
        plies = [e["ply"] for e in events if e["type"] == "move"]
        assert len(plies) == len(set(plies)) + (len(seqs) - len(set(seqs))) or len(set(plies)) == len(want)
        # The journal holds the same game, every event acknowledged by the broker.
        self.sub.wait_for(lambda: self._journal_published() >= top, 10, "the journal's published mark")
        with sqlite3.connect(self.journal) as db:
            rows = db.execute("SELECT seq, payload FROM events WHERE board = ? ORDER BY seq", (BOARD_ID,)).fetchall()
        assert [seq for seq, _ in rows] == list(range(1, top + 1))
        journal_events = [json.loads(p) for _, p in rows]
        assert unique_moves(journal_events) == want
        return {"events": top, "duplicates": len(seqs) - len(set(seqs))}

    def _journal_published(self) -> int:
        with sqlite3.connect(self.journal) as db:
            row = db.execute("SELECT published FROM boards WHERE board = ?", (BOARD_ID,)).fetchone()
        return int(row[0]) if row else 0

    def daemon_log(self) -> str:
        path = self.tmp / "daemon.log"
        return path.read_text(errors="replace") if path.exists() else ""
