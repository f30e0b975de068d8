"""The boards as LiveChess's clients see them, from bridge messages (no broker): a corrected ply goes back to the
common part first, the state follows availability and a silent board, clocks are whole seconds, redeliveries
change nothing, ``[livechess]`` in bridge.toml and the command's one-line errors."""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import chess
import pytest

from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.config import ConfigError, LiveChessConfig, from_dict
from touchmove.livechess.command import settings
from touchmove.livechess.eboards import EBoard, EBoards, Feeds

REPO = Path(__file__).resolve().parents[2]


class Heard:
    def __init__(self) -> None:
        self.feeds: list[tuple[str, Feeds]] = []
        self.seq = 0
        self.boards = EBoards(self.hear)

    def hear(self, board: EBoard, feeds: Feeds) -> None:
        self.feeds.append((board.serial, feeds))

    def event(self, board: str = "b1", **fields: Any) -> None:
        self.seq += 1
        payload = {"game": 1, "t": self.seq, "board": board, "seq": self.seq, "session": "s",
                   "ts": "2026-12-06T03:00:00.000Z", **fields}
        self.boards.handle(BridgeMessage("touchmove", board, "events", payload))

    def start(self) -> None:
        self.boards.handle(BridgeMessage("touchmove", "b1", "availability", "online"))
        self.event(type="game_start", fen=chess.STARTING_FEN, chess960=False)

    def play(self, *sans: str) -> None:
        board = chess.Board()
        for ply, san in enumerate(sans, 1):
            move = board.push_san(san)
            self.event(type="move", ply=ply, uci=move.uci(), san=san, fen=board.fen())


def test_a_corrected_ply_is_sent_as_its_common_part_then_the_new_list() -> None:
    heard = Heard()
    heard.start()
    heard.play("e4", "d5")
    heard.feeds.clear()
    heard.event(type="move_amended", ply=2, uci="e7e5", san="e5", fen="")
    board = heard.boards.boards["b1"]
    assert board.san() == ["e4", "e5"]
    assert heard.feeds == [("b1", [["e4"], None])]
    board.set_up = True
    assert board.feed(["e4"])["san"] == ["e4"] and board.feed()["san"] == ["e4", "e5"]
    heard.feeds.clear()
    heard.event(type="takeback", ply=2, fen="")
    assert heard.feeds == [("b1", [None])] and board.san() == ["e4"]


def test_state_follows_availability_the_bridge_and_a_silent_board() -> None:
    heard = Heard()
    heard.start()
    board = heard.boards.boards["b1"]
    assert board.listing()["state"] == "ACTIVE"
    heard.event(type="alert", code="board_silent", ply=1, article="", detail={})
    assert board.listing()["state"] == "NOTRESPONDING"
    heard.event(type="alert", code="board_answering", ply=1, article="", detail={})
    assert board.listing()["state"] == "ACTIVE"
    heard.boards.handle(BridgeMessage("touchmove", None, "bridge_state", {"state": "offline"}))
    assert board.listing()["state"] == "INACTIVE"
    heard.boards.handle(BridgeMessage("touchmove", None, "bridge_state", {"state": "online"}))
    heard.boards.handle(BridgeMessage("touchmove", "b1", "availability", "offline"))
    assert board.listing()["state"] == "INACTIVE"


def test_clock_presses_give_whole_seconds_and_who_runs() -> None:
    heard = Heard()
    heard.start()
    heard.play("e4")
    board = heard.boards.boards["b1"]
    heard.event(type="clock", ply=1, side="white", remaining=299_500)
    assert board.listing()["clock"] is None          # Black's time not known yet
    heard.play("e4", "e5")
    heard.event(type="clock", ply=2, side="black", remaining=298_000)
    clock = board.listing()["clock"]
    assert clock == {"white": 299, "black": 298, "run": True, "time": clock["time"]}
    assert type(clock["time"]) is int
    heard.feeds.clear()
    heard.event(type="clock", ply=2, side="black", remaining=298_000)
    assert heard.feeds == [("b1", [None])]


def test_a_redelivered_event_changes_nothing_and_a_listed_subset_keeps_its_order() -> None:
    heard = Heard()
    heard.start()
    heard.play("e4")
    heard.feeds.clear()
    heard.seq -= 1
    heard.event(type="move", ply=1, uci="e2e4", san="e4", fen="")
    assert heard.feeds == []
    only = EBoards(None, ["z9", "a1"])
    for board_id in ("a1", "b2", "z9"):
        only.handle(BridgeMessage("touchmove", board_id, "availability", "online"))
    assert [b.serial for b in only.listed()] == ["z9", "a1"]


def test_the_livechess_section_of_bridge_toml() -> None:
    assert from_dict({}).livechess is None
    assert from_dict({"livechess": {}}).livechess == LiveChessConfig()
    assert from_dict({"livechess": {"port": 2000, "boards": ["b1"]}}).livechess == LiveChessConfig(
        "127.0.0.1", 2000, ("b1",))
    for bad, words in (({"port": 70000}, "port"), ({"boards": ["a/b"]}, "boards"), ({"colour": 1}, "unknown key")):
        with pytest.raises(ConfigError, match=words):
            from_dict({"livechess": bad})


def test_the_command_s_errors_are_one_line() -> None:
    for argv, words in ((["livechess"], "--config"),
                        (["livechess", "--broker", "mqtt://127.0.0.1:1", "--port", "99999"], "--port"),
                        (["livechess", "--broker", "mqtt://127.0.0.1:1", "--board", "a b"], "--board")):
        done = subprocess.run([sys.executable, "-m", "touchmove.cli", *argv], capture_output=True, text=True,
                              cwd=REPO, timeout=60)
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_command_takes_the_bridge_s_broker_and_section_and_options_override_them(tmp_path: Path) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text('[mqtt]\nurl = "mqtt://broker.lan:1884"\nbase_topic = "hall-a"\n\n'
                      '[livechess]\nport = 2000\nboards = ["b1", "b2"]\n')
    args = argparse.Namespace(config=str(config), broker=None, base=[], host=None, port=None, board=[])
    broker, live = settings(args)
    assert (broker.host, broker.port, broker.bases) == ("broker.lan", 1884, ("hall-a",))
    assert live == LiveChessConfig("127.0.0.1", 2000, ("b1", "b2"))
    args = argparse.Namespace(config=str(config), broker=None, base=["hall-b"], host="0.0.0.0", port=1982,
                              board=["b9"])
    broker, live = settings(args)
    assert broker.bases == ("hall-b",) and live == LiveChessConfig("0.0.0.0", 1982, ("b9",))


def test_a_port_already_taken_is_one_line_for_both_commands(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "bridge.toml"
        config.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:1"\n\n[journal]\npath = "{tmp_path}/j.sqlite3"\n\n'
                          f"[livechess]\nport = {port}\n")
        for argv in (["livechess", "--config", str(config)], ["run", "--config", str(config)]):
            done = subprocess.run([sys.executable, "-m", "touchmove.cli", *argv], capture_output=True, text=True,
                                  cwd=REPO, timeout=60)
            lines = [line for line in done.stderr.splitlines() if "cannot listen" in line]
            assert done.returncode == 2 and len(lines) == 1 and str(port) in lines[0], done.stderr
            assert "Traceback" not in done.stderr
