"""Each vendor board's emulator on a pty, the real bridge and a real Mosquitto: the Opera Game and shared games
come back move for move on MQTT, in the journal and in the export; a DGT board unplugged mid-game gives back
the moves made meanwhile from its memory."""

from __future__ import annotations

import time
from pathlib import Path

import chess
import pytest

from tests.boards.rig import BoardRig
from tests.host.games import require_games
from touchmove.demo import DEFAULT_PGN, read_game

OPERA = list(read_game(DEFAULT_PGN).mainline_moves())


@pytest.mark.parametrize("protocol", ["dgt", "chesslink", "chessnut"])
def test_opera_game_through_the_bridge(tmp_path: Path, protocol: str) -> None:
    want = [m.uci() for m in OPERA]
    with BoardRig(tmp_path, protocol, OPERA, speed=5) as rig:
        rig.wait_game(want, timeout=120)
        assert "changes_lost" not in rig.alerts()
        counts = rig.counts()
    assert counts == {"published": len(want), "journaled": len(want), "exported": len(want)}


@pytest.mark.parametrize("protocol", ["dgt", "chesslink", "chessnut"])
def test_a_shared_game_through_the_bridge(tmp_path: Path, protocol: str) -> None:
    games = require_games()
    name, _start, moves = next(g for g in games if len(g[2]) >= 60 and g[1].fen() == chess.STARTING_FEN)
    want = [m.uci() for m in moves]
    with BoardRig(tmp_path, protocol, moves, speed=8, seed=3) as rig:
        rig.wait_game(want, timeout=180)
        counts = rig.counts()
    assert counts == {"published": len(want), "journaled": len(want), "exported": len(want)}, name


def test_dgt_unplugged_mid_game_gives_back_its_moves_from_memory(tmp_path: Path) -> None:
    want = [m.uci() for m in OPERA]
    with BoardRig(tmp_path, "dgt", OPERA, speed=5) as rig:
        rig.wait_game(want[:8], timeout=60)
        rig.board.unplug()                # the cable out: the board plays on, its reports are lost
        time.sleep(3.0)                   # 15 s of play at speed 5: several plies
        assert len(rig.moves()) < 14
        rig.board.plug()
        rig.wait_game(want, timeout=120)
        assert "changes_lost" not in rig.alerts()
        assert "read from the board's memory" in rig.log()
        counts = rig.counts()
    assert counts == {"published": len(want), "journaled": len(want), "exported": len(want)}
