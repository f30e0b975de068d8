"""The command-line entries: ``touchmove broadcast-demo`` and ``touchmove broadcast --config``."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import chess.pgn
import pytest

from tests.broadcast.broadcast_helpers import tournament_data
from touchmove.cli import main
from touchmove.sim.local_broker import LocalBroker, free_port

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


def test_demo_round_of_200_boards_reads_back(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             broker: LocalBroker) -> None:
    """200 boards: board 31 plays the scripted Opera Game and is a takeback board (31 % 7 == 3), ratings
    must stay positive past board 153; the demo's check passes and the file holds 200 legal games."""
    status = main(["broadcast-demo", "--boards", "200", "--plies", "14", "--move-time", "0.01",
                   "--out", str(tmp_path), "--broker", broker.url])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "round PGN check ok: 200 games" in out
    stream = io.StringIO((tmp_path / "round-1.pgn").read_text())
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors
        games.append(game)
    assert len(games) == 200 and all(int(g.headers["BlackElo"]) > 1000 for g in games)
    fide_ids = [g.headers[f"{side}FideId"] for g in games for side in ("White", "Black")]
    assert len(set(fide_ids)) == 400


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
    err = capsys.readouterr().err
    assert "round 4" in err and err.count("\n") == 1


def _toml_value(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


def _toml(data: dict) -> str:
    """Just enough TOML for the tournament files of these tests."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict | list)
             or (isinstance(v, list) and not all(isinstance(x, dict) for x in v))]
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"[{key}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in value.items()]
        elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            for item in value:
                lines.append(f"[[{key}]]")
                for k, v in item.items():
                    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                        continue
                    lines.append(f"{k} = {_toml_value(v)}")
                for k, v in item.items():
                    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                        for sub in v:
                            lines.append(f"[[{key}.{k}]]")
                            lines += [f"{kk} = {_toml_value(vv)}" for kk, vv in sub.items()]
    return "\n".join(lines) + "\n"


def _busy_port() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock, sock.getsockname()[1]


CONFIG_CASES = [
    ("port 99999", lambda d: d["broadcast"].update(port=99999), "broadcast.port must be between 0 and 65535"),
    ("rounds = 5", lambda d: d.update(rounds=5), "rounds must be a list"),
    ("board = -3", lambda d: d["rounds"][0]["boards"][0].update(board=-3), "board must be between 1"),
    ("empty name", lambda d: d["rounds"][0]["boards"][0].update(white=""), "white name must be a non-empty"),
    ("empty table name", lambda d: d["rounds"][0]["boards"][1].update(black={"name": " "}),
     "black.name must be a non-empty"),
    ("no boards", lambda d: d["rounds"][0].update(boards=[]), "round 3 has no boards"),
    ("fideid typo", lambda d: d["rounds"][0]["boards"][0]["white"].update(fideid=1),
     "unknown key 'fideid' (did you mean 'fide_id'?)"),
    ("top typo", lambda d: d.update(evnt="x"), "unknown key 'evnt' (did you mean 'event'?)"),
    ("broadcast typo", lambda d: d["broadcast"].update(delay_minute=5), "did you mean 'delay_minutes'?"),
    ("board_id number", lambda d: d["rounds"][0]["boards"][0].update(board_id=1234),
     'board_id must be the bridge\'s board id as a string (board_id = "1234")'),
    ("negative delay", lambda d: d["broadcast"].update(delay_minutes=-1), "delay_minutes must be a number"),
    ("lichess above the limit", lambda d: d["rounds"][0].update(lichess_round="abcd1234")
     or d["broadcast"].update(lichess_max_games=2), "above lichess's 2 per round"),
]


@pytest.mark.parametrize(("name", "mutate", "message"), CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_config_errors_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                              mutate: Any, message: str) -> None:
    data = tournament_data(3, out=tmp_path / "out")
    mutate(data)
    config = tmp_path / "t.toml"
    config.write_text(_toml(data))
    assert main(["broadcast", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_runtime_config_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    """The port in use and an unwritable output_dir, through the real command (a process)."""
    sock, port = _busy_port()
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    cases = [({"port": port}, f"cannot listen on 127.0.0.1:{port}"),
             ({"output_dir": str(blocker / "sub")}, "is not writable")]
    try:
        for change, message in cases:
            data = tournament_data(2, out=tmp_path / "out")
            data["broadcast"].update(change)
            config = tmp_path / "t.toml"
            config.write_text(_toml(data))
            proc = subprocess.run([sys.executable, "-m", "touchmove.cli", "broadcast", "--config", str(config)],
                                  capture_output=True, text=True, timeout=60, cwd=REPO)
            assert proc.returncode == 2, proc.stderr
            assert message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
        proc = subprocess.run([sys.executable, "-m", "touchmove.cli", "broadcast", "--config", str(config),
                               "--port", "99999"], capture_output=True, text=True, timeout=60, cwd=REPO)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    finally:
        sock.close()


def test_demo_into_the_folder_of_an_earlier_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                broker: LocalBroker) -> None:
    """Issue 36, item 9: a second run with the same --out plays its own round (the first run's state would
    bring its games back and fail the check); the first run's outputs are kept aside, not lost."""
    args = ["broadcast-demo", "--boards", "4", "--plies", "12", "--move-time", "0.01", "--out", str(tmp_path),
            "--broker", broker.url]
    assert main(args) == 0
    first = (tmp_path / "round-1.pgn").read_text()
    capsys.readouterr()
    assert main([*args, "--seed", "7"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "round PGN check ok: 4 games" in out and f"moved to {tmp_path / 'earlier-run-1'}" in out
    assert (tmp_path / "earlier-run-1" / "round-1.pgn").read_text() == first
    assert (tmp_path / "round-1.pgn").read_text() != first


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_demo_serve_stopped_by_a_signal_leaves_no_mosquitto(tmp_path: Path, sig: int) -> None:
    """Issue 36, item 9: SIGTERM (a service manager) or SIGHUP (a closed terminal) to `broadcast-demo --serve`
    stops it cleanly, its private Mosquitto with it."""
    if not LocalBroker.available():
        pytest.skip("mosquitto is not installed")
    env = {**os.environ, "PYTHONPATH": str(REPO / "host")}
    proc = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "broadcast-demo", "--boards", "2", "--plies", "6",
                             "--move-time", "0.01", "--port", "0", "--serve", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    lines: list[str] = []
    port = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("private Mosquitto on mqtt://"):
            port = int(line.rsplit(":", 1)[1])
        if "serving the dashboard" in line:
            break
    assert port is not None and "serving the dashboard" in lines[-1], "".join(lines)
    socket.create_connection(("127.0.0.1", port), timeout=2).close()  # the private Mosquitto runs
    proc.send_signal(sig)
    status = proc.wait(20)
    rest = proc.stdout.read()
    assert status in (0, 128 + sig), "".join(lines) + rest
    with pytest.raises(OSError):  # nothing listens there any more
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
