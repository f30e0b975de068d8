"""Records, events and footprints are values: equal and hashable by their fields, read-only to the type checker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import chess

from touchmove.records import Lift, Other
from touchmove.rules.events import Alert, MoveMade
from touchmove.rules.footprints import footprint

REPO = Path(__file__).resolve().parents[2]


def test_values_are_equal_and_hashable_by_their_fields() -> None:
    move = MoveMade(1, 2000, 1, "e2e4", "e4", chess.Board().fen())
    assert move == MoveMade(1, 2000, 1, "e2e4", "e4", chess.Board().fen())
    assert len({move, MoveMade(1, 2000, 1, "e2e4", "e4", chess.Board().fen())}) == 1
    assert {Lift(5, chess.E2): "lifted"}[Lift(5, chess.E2)] == "lifted"
    assert hash(Other(1, "hello", (("id", "b1"),))) == hash(Other(1, "hello", (("id", "b1"),)))
    board = chess.Board()
    assert footprint(board, chess.Move.from_uci("g1f3")) == footprint(board, chess.Move.from_uci("g1f3"))
    assert Alert(1, 5, "board_mismatch", 3, "7.4", {}).__slots__  # slotted: no per-object dict


def test_the_type_checker_refuses_to_change_a_field(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from touchmove.rules.events import MoveMade\n"
                     "from touchmove.records import Lift\n"
                     "move = MoveMade(1, 2, 3, 'e2e4', 'e4', 'fen')\n"
                     "move.san = 'e5'\n"
                     "Lift(1, 12).sq = 13\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                          str(probe)], capture_output=True, text=True, cwd=REPO,
                         env={"MYPYPATH": str(REPO / "host"), "PATH": ""})
    assert out.returncode == 1, out.stdout + out.stderr
    assert 'Property "san" defined in "MoveMade" is read-only' in out.stdout
    assert 'Property "sq" defined in "Lift" is read-only' in out.stdout
