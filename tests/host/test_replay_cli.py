"""``touchmove replay``: the command line around the engine."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import chess
import chess.pgn
import pytest

from touchmove import records
from touchmove.cli import main

FOOLS_MATE = [
    ("lift", "f2"), ("place", "f3"), ("lift", "e7"), ("place", "e5"),
    ("lift", "g2"), ("place", "g4"), ("lift", "d8"), ("place", "h4"),
]


def recording(moves: list[tuple[str, str]], t0: int = 1000, gap: int = 700) -> list[str]:
    return [json.dumps({"t": t0 + i * gap, "type": kind, "sq": sq}) for i, (kind, sq) in enumerate(moves)]


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "game.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_jsonl_gives_every_event(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(write(tmp_path, recording(FOOLS_MATE))), "--jsonl"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert events[0] == {"type": "game_start", "game": 1, "t": 1000, "fen": chess.STARTING_FEN, "chess960": False}
    moves = [e for e in events if e["type"] == "move"]
    assert [m["uci"] for m in moves] == ["f2f3", "e7e5", "g2g4", "d8h4"]
    assert [m["ply"] for m in moves] == [1, 2, 3, 4]
    assert moves[-1]["san"] == "Qh4#"
    assert events[-1]["type"] == "game_end"
    assert events[-1]["result"] == "0-1"
    assert events[-1]["article"] == "5.1.1"
    touches = [e for e in events if e["type"] == "touch"]
    assert touches[0] == {"type": "touch", "game": 1, "t": 1000, "ply": 1, "sq": "f2", "piece": "P",
                          "side": "mover", "binds": True}


def test_pgn_has_the_result_when_the_board_decided(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(write(tmp_path, recording(FOOLS_MATE))), "--pgn"]) == 0
    game = chess.pgn.read_game(io.StringIO(capsys.readouterr().out))
    assert game is not None
    assert game.headers["Result"] == "0-1"
    assert [m.uci() for m in game.mainline_moves()] == ["f2f3", "e7e5", "g2g4", "d8h4"]


def test_unfinished_game_is_a_star(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(write(tmp_path, recording(FOOLS_MATE[:4]))), "--pgn"]) == 0
    game = chess.pgn.read_game(io.StringIO(capsys.readouterr().out))
    assert game is not None
    assert game.headers["Result"] == "*"


def test_bad_lines_are_reported_and_the_rest_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = recording(FOOLS_MATE)
    lines.insert(2, "{broken")
    lines.insert(5, '{"t": 2500, "type": "levitate", "sq": "e4"}')
    assert main(["replay", str(write(tmp_path, lines)), "--jsonl"]) == 0
    out, err = capsys.readouterr()
    assert "line 3: not JSON" in err
    assert "line 6: unknown record type 'levitate'" in err
    assert [json.loads(x)["uci"] for x in out.splitlines() if '"move"' in x] == ["f2f3", "e7e5", "g2g4", "d8h4"]


def test_start_position_and_chess960(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = recording([("lift", "b1"), ("place", "c1"), ("lift", "a1"), ("place", "d1")])
    path = write(tmp_path, lines)
    assert main(["replay", str(path), "--jsonl", "--fen", "1k6/8/8/8/8/8/8/RK6 w A - 0 1", "--chess960"]) == 0
    events = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    # The king rests on c1 (a legal king move, published), then the rook comes: castling, amended (4.7.2).
    plies = [(e["type"], e["san"]) for e in events if e["type"] in ("move", "move_amended")]
    assert plies == [("move", "Kc1"), ("move_amended", "O-O-O")]
    assert not [e for e in events if e["type"] == "alert"]


def test_settle_time_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The knight rests 150 ms on f3: released with a 100 ms settle time, passing through with 200 ms.
    lines = [json.dumps(r) for r in [
        {"t": 0, "type": "lift", "sq": "g1"}, {"t": 100, "type": "place", "sq": "f3"},
        {"t": 250, "type": "lift", "sq": "f3"}, {"t": 350, "type": "place", "sq": "h3"},
    ]]
    path = write(tmp_path, lines)
    assert main(["replay", str(path), "--jsonl", "--settle-ms", "100"]) == 0
    codes = [json.loads(x).get("code") for x in capsys.readouterr().out.splitlines()]
    assert "moved_after_release" in codes
    assert main(["replay", str(path), "--jsonl", "--settle-ms", "200"]) == 0
    codes = [json.loads(x).get("code") for x in capsys.readouterr().out.splitlines()]
    assert "moved_after_release" not in codes


def test_invalid_options_fail_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, recording(FOOLS_MATE))
    assert main(["replay", str(path), "--pgn", "--fen", "not a fen"]) == 2
    assert "invalid --fen" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.jsonl"), "--pgn"]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert main(["replay", str(path)]) == 2  # one of --pgn / --jsonl is required
    assert "--pgn" in capsys.readouterr().err


def test_console_script_reads_stdin() -> None:
    text = "\n".join(recording(FOOLS_MATE)) + "\n"
    done = subprocess.run([sys.executable, "-m", "touchmove.cli", "replay", "-", "--pgn"], input=text,
                          capture_output=True, text=True, check=True, timeout=60)
    assert "Qh4# 0-1" in done.stdout


def test_a_recording_written_by_the_records_module_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    made = [records.Lift(0, chess.E2), records.Place(300, chess.E4), records.Clock(400, chess.WHITE, 59000)]
    path = write(tmp_path, [records.to_line(r) for r in made])
    assert main(["replay", str(path), "--jsonl"]) == 0
    events = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {"type": "clock", "game": 1, "t": 400, "ply": 1, "side": "white", "remaining": 59000} in events
