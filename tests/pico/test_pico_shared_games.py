"""Twenty shared games (../shared/data/games) on emulated Picos with the hc165 chain, end to end: each game exact
on MQTT, in the journal and in ``touchmove export``. Two boards play at a time on one bridge (each its own board
id, as two boards on one host), at rig.PACE."""

from __future__ import annotations

import chess

from tests.host.games import require_games
from tests.pico.emulator import EmulatedPico, FlashCache
from tests.pico.rig import BridgeRig, board_timeline, budget_s

GAMES = 20
AT_ONCE = 2


def pick_games() -> list[tuple[str, list[chess.Move]]]:
    """The 20 shortest games of at least 10 plies from the standard start (name order breaks ties)."""
    games = [(name, moves) for name, start, moves in require_games()
             if start.fen() == chess.STARTING_FEN and not start.chess960 and len(moves) >= 10]
    games.sort(key=lambda g: (len(g[1]), g[0]))
    return games[:GAMES]


def test_twenty_shared_games_on_hc165(rig: BridgeRig, flashes: FlashCache) -> None:
    games = pick_games()
    assert len(games) == GAMES
    flash = flashes.board(None)
    totals = {"played": 0, "published": 0, "journaled": 0, "exported": 0}
    for first in range(0, GAMES, AT_ONCE):
        batch = games[first:first + AT_ONCE]
        running: list[tuple[str, list[str], EmulatedPico]] = []
        for k, (_name, moves) in enumerate(batch):
            board_id = f"{0xE6613852_00000000 + first + k:016x}"
            pico = rig.board(flash, "hc165", f"ttyPICO{first + k}", board_id=board_id,
                             occ=chess.Board().occupied).start()
            running.append((board_id, [m.uci() for m in moves], pico))
        for board_id, _want, pico in running:
            pico.wait(lambda e: e.get("ev") == "line" and '"hello"' in e["text"], 300, f"{board_id}'s hello")
        budget = 0.0
        for (_board_id, _want, pico), (_name, moves) in zip(running, batch, strict=True):
            timeline = board_timeline(chess.Board(), moves, seed=first)
            pico.play(timeline)
            budget = max(budget, AT_ONCE * budget_s(timeline))
        for board_id, want, pico in running:
            rig.wait_moves(board_id, want, budget)
            counts = rig.assert_exact(board_id, want)
            for key in totals:
                totals[key] += counts[key]
            assert not pico.of("reset")
            pico.stop()
    assert totals["played"] == totals["published"] == totals["journaled"] == totals["exported"]
    assert totals["played"] == sum(len(m) for _, m in games)
