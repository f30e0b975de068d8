"""The demo's terminal board reads right without colour (pasted, or on a terminal without it): White's pieces
are drawn with the white glyphs, Black's with the black ones; and ``broadcast-demo`` needs no Mosquitto."""

from __future__ import annotations

from pathlib import Path

import chess
import pytest
from rich.console import Console

from touchmove.cli import main
from touchmove.sim.demo import View
from touchmove.sim.local_broker import LocalBroker


def plain_board(view: View) -> list[str]:
    """Return the board's eight rank lines as a terminal without colour shows them."""
    console = Console(width=160, color_system=None, record=True)
    console.print(view.render())
    text = console.export_text()
    return [line for line in text.splitlines() if line.lstrip("│ ")[:2] in {f"{r} " for r in "12345678"}]


def test_the_board_without_colour_shows_each_side_by_its_glyphs() -> None:
    view = View()
    view.fen = chess.STARTING_FEN
    ranks = plain_board(view)
    assert len(ranks) == 8
    eighth, first = ranks[0], ranks[-1]
    assert "♜" in eighth and "♚" in eighth and "♖" not in eighth and "♔" not in eighth
    assert "♖" in first and "♔" in first and "♜" not in first and "♚" not in first
    assert ranks[1].count("♟") == 8 and ranks[6].count("♙") == 8


def test_broadcast_demo_runs_without_mosquitto(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LocalBroker, "available", staticmethod(lambda: False))
    status = main(["broadcast-demo", "--boards", "4", "--plies", "30", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert status == 0, out + err
    assert "embedded broker" in out and "round PGN check ok: 4 games" in out
    assert (tmp_path / "round-1.pgn").read_text().count("[Event ") == 4
