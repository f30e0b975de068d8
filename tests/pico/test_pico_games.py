"""Games end to end on the emulated Pico: magnets over squares at the sensors' pins, the stock MicroPython image
running the firmware (.mpy, as installed by a builder), USB CDC on a pty, the real ``touchmove run``, Mosquitto,
the journal and ``touchmove export``. Pace: rig.PACE (about 0.4 s a ply)."""

from __future__ import annotations

import chess
import pytest

from tests.e2e.helpers import OPERA, game_moves
from tests.pico.emulator import BOARD_ID, FlashCache
from tests.pico.rig import BridgeRig, board_timeline

#: board.json for each driver's profile (hc165 is the firmware's default profile: no board.json needed)
PROFILES: dict[str, dict[str, str] | None] = {
    "hc165": None,
    "matrix": {"profile": "matrix"},
    "mcp23017": {"profile": "mcp23017"},
    "hall_mux": {"profile": "hall_mux"},
}


def play_game(rig: BridgeRig, flashes: FlashCache, driver: str, moves: list[chess.Move],
              start: chess.Board | None = None, board_id: str = BOARD_ID, name: str = "ttyPICO0",
              timeout: float = 600) -> dict[str, int]:
    start = start or chess.Board()
    pico = rig.board(flashes.board(PROFILES[driver]), driver, name, board_id=board_id, occ=start.occupied).start()
    assert rig.sub is not None
    rig.sub.wait_for(lambda: any(e.get("type") == "board_online" or e.get("type") == "game_start"
                                 for e in rig.events(board_id)) or bool(pico.lines()), 120, "the board's hello")
    pico.play(board_timeline(start, moves))
    want = [m.uci() for m in moves]
    rig.wait_moves(board_id, want, timeout)
    return rig.assert_exact(board_id, want)


@pytest.mark.parametrize("driver", ["hc165", "matrix", "mcp23017", "hall_mux"])
def test_opera_game_on_each_driver(rig: BridgeRig, flashes: FlashCache, driver: str) -> None:
    counts = play_game(rig, flashes, driver, game_moves(OPERA))
    assert counts == {"played": 33, "published": 33, "journaled": 33, "exported": 33}
