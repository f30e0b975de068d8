"""Forfeits stay forfeits (issue 36, item 3): the arbiter's ``1-0f``/``0-1f`` through the console's HTTP
API is kept as a forfeit in the round state, the CSV (``1-0f``, reason ``forfeit``) and both TRFs (``+`` /
``-``), across a restart; a played result entered afterwards is a played result again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from tests.broadcast.broadcast_helpers import tournament_data
from tests.broadcast.test_broadcast_mqtt import wait_for
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.sim.broadcast_boards import SimBridge
from touchmove.sim.local_broker import LocalBroker

TOKEN = {"Authorization": "Bearer s3cret"}


def test_forfeits_are_kept_as_forfeits(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_forfeits(broker, tmp_path))


def _codes(trf: str) -> dict[str, str]:
    """Each player's (by name) result code in the last round of a TRF (round 3: columns 112-119)."""
    return {line[14:47].strip(): line[111:119].rstrip()[-1] for line in trf.splitlines() if line.startswith("001")}


async def _forfeits(broker: LocalBroker, tmp_path: Path) -> None:
    import aiomqtt

    t = parse_tournament(tournament_data(4, port=broker.port, out=tmp_path))
    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        bridge = SimBridge(client)
        board = bridge.board("b01")
        await board.start()
        async with BroadcastService(t, port=0, svg_workers=0) as svc, aiohttp.ClientSession() as http:
            for uci in ["e2e4", "e7e5"]:
                await board.move(uci, remaining_ms=170_000)
            await wait_for(lambda: svc.hub.storage.by_number[1].game.ply == 2, what="board 1's moves")
            answers = []
            for n, result in ((1, "1/2-1/2"), (2, "1-0f"), (3, "0-1f"), (4, "0-0f")):
                async with http.post(f"{svc.url}/api/boards/{n}/result", json={"result": result},
                                     headers=TOKEN) as resp:
                    assert resp.status == 200
                    answers.append((await resp.json())["board"])
                    assert answers[-1]["result"] == result.rstrip("f")
            async with http.get(f"{svc.url}/round/3/results.csv") as resp:
                served_csv = await resp.text()
            async with http.get(f"{svc.url}/results.trf") as resp:
                served_trf = await resp.text()
    rows = [line.split(",") for line in served_csv.splitlines()[1:]]
    assert [(r[-3], r[-2], r[-1]) for r in rows] == [("1/2-1/2", "arbiter", ""), ("1-0f", "arbiter", "forfeit"),
                                                     ("0-1f", "arbiter", "forfeit"), ("0-0f", "arbiter", "forfeit")]
    assert (tmp_path / "round-3-results.csv").read_text() == served_csv
    assert [a.get("forfeit") for a in answers] == [False, True, True, True]  # the board's JSON says it too
    codes = _codes(served_trf)
    assert codes == {"White, Player 1": "=", "Black, Player 1": "=", "White, Player 2": "+",
                     "Black, Player 2": "-", "White, Player 3": "-", "Black, Player 3": "+",
                     "White, Player 4": "-", "Black, Player 4": "-"}, served_trf
    # the double forfeit has no PGN result: "*", and the Termination tag says it (pgn-extract reads the file)
    pgn = (tmp_path / "round-3.pgn").read_text().split('[Round "3.4"]')[1]
    assert '[Result "*"]' in pgn and '[Termination "double forfeit"]' in pgn and pgn.rstrip().endswith("\n*")
    assert _codes((tmp_path / "results-2026.trf").read_text()) == codes
    state = json.loads((tmp_path / "round-3-state.json").read_text())
    assert state["boards"]["2"]["entries"][0]["results"]["arbiter_reason"] == "forfeit"
    # a restart keeps them; the arbiter then says board 3 was played after all (0-1): a played result
    async with BroadcastService(t, port=0, svg_workers=0) as svc2, aiohttp.ClientSession() as http:
        assert svc2.hub.storage.by_number[2].to_json()["forfeit"] is True
        async with http.get(f"{svc2.url}/results.trf") as resp:
            assert _codes(await resp.text()) == codes
        async with http.post(f"{svc2.url}/api/boards/3/result", json={"result": "0-1"}, headers=TOKEN) as resp:
            assert resp.status == 200 and (await resp.json())["board"]["forfeit"] is False
        async with http.get(f"{svc2.url}/results.trf") as resp:
            again = _codes(await resp.text())
    assert again["White, Player 3"] == "0" and again["Black, Player 3"] == "1"  # played (not followed here)
