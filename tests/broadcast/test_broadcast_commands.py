"""The command-line entries: ``touchmove broadcast-demo`` and ``touchmove broadcast --config``."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import chess.pgn
import pytest

from touchmove.broadcast.local_broker import LocalBroker, free_port
from touchmove.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_demo_round_of_20_boards_reads_back(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            broker: LocalBroker) -> None:
    """The demo's own check passes, and python-chess reads 20 games from the file it wrote."""
    status = main(["broadcast-demo", "--boards", "20", "--plies", "40", "--move-time", "0.01",
                   "--out", str(tmp_path), "--broker", broker.url])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "round PGN check ok: 20 games" in out
    stream = io.StringIO((tmp_path / "round-1.pgn").read_text())
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors
        games.append(game)
    assert [g.headers["Round"] for g in games] == [f"1.{n}" for n in range(1, 21)]
    assert all(g.headers["Result"] in ("1-0", "0-1", "1/2-1/2") for g in games)
    assert sum(len(list(g.mainline_moves())) for g in games) > 300


def test_broadcast_command_serves_and_stops(tmp_path: Path, broker: LocalBroker) -> None:
    port = free_port()
    config = tmp_path / "tournament.toml"
    config.write_text(f"""
event = "Cli Open"
site = "Here"
time_control = "600+5"
round = 2

[broadcast]
output_dir = "pgn"

[[brokers]]
url = "{broker.url}"

[[rounds]]
number = 1
[[rounds.boards]]
board_id = "x1"
white = "A"
black = "B"

[[rounds]]
number = 2
[[rounds.boards]]
board_id = "x1"
white = "B"
black = "A"
""")
    env = {**os.environ, "TOUCHMOVE_ARBITER_TOKEN": ""}
    proc = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "broadcast", "--config", str(config),
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, cwd=REPO)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/round/2.pgn", timeout=1) as resp:
                    text = resp.read().decode()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    out = proc.communicate()[0].decode()
                    raise AssertionError(f"the broadcaster did not start:\n{out}") from None
                time.sleep(0.1)
        assert '[Round "2.1"]' in text and '[White "B"]' in text and '[TimeControl "600+5"]' in text
        assert (tmp_path / "pgn" / "round-2.pgn").read_text() == text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state?svg=0", timeout=2) as resp:
            assert json.load(resp)["round"] == 2
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/boards/1/result", method="POST",
                                         data=b'{"result":"1-0"}', headers={"Authorization": "Bearer x"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=2)
        assert refused.value.code == 403  # no token configured: actions are off
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            raise AssertionError(f"touchmove broadcast did not stop on SIGTERM:\n{out.decode()}") from None
    assert proc.returncode == 0, out.decode()
    assert b"/round/2.pgn" in out


def test_bad_config_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "t.toml"
    config.write_text('event = "x"\nround = 4\n')
    assert main(["broadcast", "--config", str(config)]) == 2
    assert "round 4" in capsys.readouterr().err


