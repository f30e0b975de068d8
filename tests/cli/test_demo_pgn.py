"""``touchmove demo --pgn``: any game is played to its end through firmware, bridge and a private Mosquitto;
a result the board cannot see (resignation, time, agreement) comes from the PGN's ``Result`` tag, sent as the
bridge's ``result`` command: the journal and ``export`` carry it, not only the PGN printed."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import chess.pgn

from touchmove.sim.local_broker import LocalBroker

RESIGNED = ('[Event "Blitz"]\n[White "A"]\n[Black "B"]\n[Result "0-1"]\n[Termination "White resigns"]\n\n'
            "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 0-1\n")


def test_a_game_ended_by_resignation(tmp_path: Path, broker: LocalBroker) -> None:
    pgn = tmp_path / "resigned.pgn"
    pgn.write_text(RESIGNED)
    journal = tmp_path / "journal.sqlite3"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = subprocess.run([sys.executable, "-m", "touchmove.cli", "demo", "--pgn", str(pgn), "--no-ui",
                           "--speed", "4", "--broker", broker.url, "--journal", str(journal)],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path,
                          env=dict(os.environ, TMPDIR=str(scratch)))
    assert done.returncode == 0, done.stderr
    assert not list(scratch.iterdir()), "the demo left its working folder behind (issue 38)"
    assert "from the PGN's Result tag" in done.stderr
    assert "Traceback" not in done.stderr
    game = chess.pgn.read_game(io.StringIO(done.stdout[done.stdout.index("[Event"):]))
    assert game is not None
    assert game.headers["Result"] == "0-1" and game.headers["Termination"] == "White resigns"
    assert [m.uci() for m in game.mainline_moves()] == ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]
    # The real path: the result is a journaled operator record and a published game_end event ...
    with sqlite3.connect(journal) as db:
        bodies = [row[0] for row in db.execute("SELECT body FROM entries WHERE source = 'operator'")]
        ends = [json.loads(row[0]) for row in db.execute("SELECT payload FROM events WHERE type = 'game_end'")]
    declared = [json.loads(b) for b in bodies if b and '"type":"result"' in b]
    assert [(d["result"], d["reason"]) for d in declared] == [("0-1", "White resigns")]
    assert [(e["result"], e["by"]) for e in ends] == [("0-1", "arbiter")]
    # ... and export, replaying the journal, gives the same result.
    exported = subprocess.run([sys.executable, "-m", "touchmove.cli", "export", str(journal), "--pgn", "-",
                               "--recording", str(tmp_path / "rec.jsonl")],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    again = chess.pgn.read_game(io.StringIO(exported.stdout))
    assert again is not None
    assert again.headers["Result"] == "0-1" and again.headers["Termination"] == "White resigns"
    assert len(list(again.mainline_moves())) == 6


def test_a_game_from_its_own_position(tmp_path: Path, broker: LocalBroker) -> None:
    """A PGN with a FEN: the sim board starts from that position and the bridge is told (``setup``)."""
    pgn = tmp_path / "ending.pgn"
    pgn.write_text('[Event "Ending"]\n[Result "1/2-1/2"]\n[SetUp "1"]\n[FEN "4k3/8/8/8/8/8/4P3/4K2R w K - 0 1"]\n\n'
                   "1. O-O Kd7 2. e4 Ke6 1/2-1/2\n")
    done = subprocess.run([sys.executable, "-m", "touchmove.cli", "demo", "--pgn", str(pgn), "--no-ui",
                           "--speed", "4", "--broker", broker.url], capture_output=True, text=True, timeout=180,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    game = chess.pgn.read_game(io.StringIO(done.stdout[done.stdout.index("[Event"):]))
    assert game is not None
    assert game.headers["FEN"] == "4k3/8/8/8/8/8/4P3/4K2R w K - 0 1" and game.headers["Result"] == "1/2-1/2"
    assert [m.uci() for m in game.mainline_moves()] == ["e1g1", "e8d7", "e2e4", "d7e6"]
