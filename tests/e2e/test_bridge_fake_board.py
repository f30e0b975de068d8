"""The daemon end to end with a CPython stand-in board: pty -> touchmove run -> Mosquitto -> subscriber."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from tests.e2e.helpers import (
    OPERA,
    REPO,
    Broker,
    Subscriber,
    game_moves,
    simple_timeline,
    start_daemon,
    unique_moves,
    write_config,
    write_timeline,
)
from touchmove.sim.ptyboard import PtyBoard

FAKE = REPO / "tests" / "e2e" / "fake_board.py"


def test_opera_game_through_the_daemon(tmp_path: Path, broker: Broker) -> None:
    moves = game_moves(OPERA)
    timeline = write_timeline(tmp_path / "t.jsonl", simple_timeline(moves, think=400, hand=120))
    board = PtyBoard([sys.executable, str(FAKE), str(timeline), "fake1", "--speed", "4"],
                     str(tmp_path / "board1"))
    board.plug()
    sub = Subscriber(broker.port)
    journal = tmp_path / "j.sqlite3"
    cfg = write_config(tmp_path / "c.toml", broker_port=broker.port, ports=[str(tmp_path / "board*")],
                       journal=journal, settle_ms=150)
    daemon = start_daemon(cfg, tmp_path / "daemon.log")
    try:
        sub.wait_for(lambda: sub.last("touchmove/bridge/state") is not None, 10, "bridge online")
        board.start()
        expected = [m.uci() for m in moves]
        sub.wait_for(lambda: unique_moves(sub.events("fake1")) == expected, 60, "the whole game")
        sub.wait_for(lambda: any(e["type"] == "game_end" for e in sub.events("fake1")), 10, "game end")
        seqs = [e["seq"] for e in sub.events("fake1")]
        assert sorted(set(seqs)) == list(range(1, max(seqs) + 1))
        pgn = sub.last("touchmove/boards/fake1/pgn")
        assert pgn is not None and "17. Rd8#" in pgn.payload.decode()
    finally:
        daemon.terminate()
        daemon.wait(10)
        board.stop()
        sub.close()
    with sqlite3.connect(journal) as db:
        n_events = db.execute("SELECT COUNT(*) FROM events WHERE board='fake1'").fetchone()[0]
        published = db.execute("SELECT published FROM boards WHERE board='fake1'").fetchone()[0]
    assert n_events == published == max(seqs)
