"""The live LiveChess Cloud JSON against the field rules of lichess's reader (issue 36, item 2): through
Mosquitto, a game being played (clocks running), a finished one and one not started; every document of the
round reads under lila's ``DgtJson`` rules (:mod:`tests.broadcast.lichess_dgt_rules`), ``clock.time`` an
integer whenever ``clock`` is there, and the moves read back as the game played."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt

from tests.broadcast.broadcast_helpers import tournament_data
from tests.broadcast.lichess_dgt_rules import game_problems, index_problems, sans
from tests.broadcast.test_broadcast_mqtt import wait_for
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.sim.broadcast_boards import SimBridge
from touchmove.sim.local_broker import LocalBroker

LIVE = ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4"]
MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]


def test_live_json_reads_under_lichess_rules(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_live_json(broker, tmp_path))


async def _live_json(broker: LocalBroker, tmp_path: Path) -> None:
    t = parse_tournament(tournament_data(3, port=broker.port, out=tmp_path))
    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        bridge = SimBridge(client)
        live, mated = bridge.board("b01"), bridge.board("b02")
        async with BroadcastService(t, port=0, svg_workers=0) as svc, aiohttp.ClientSession() as http:
            await live.start()
            await mated.start()
            last: dict[str, Any] = {}
            for i, uci in enumerate(LIVE):
                last = await live.move(uci, remaining_ms=180_000 - 3_100 * i)
            for i, uci in enumerate(MATE):
                await mated.move(uci, remaining_ms=180_000 - 2_000 * i)
            await mated.end("0-1", "checkmate")
            hub = svc.hub
            await wait_for(lambda: hub.storage.by_number[1].game.ply == len(LIVE)
                           and hub.storage.by_number[2].game.results.effective() == "0-1", what="the games")
            await wait_for(lambda: hub.outputs.written_version == hub.storage.version, what="written")

            async def get(path: str) -> Any:
                async with http.get(f"{svc.url}/live/{path}") as resp:
                    assert resp.status == 200, path
                    return json.loads(await resp.text())

            index = await get("round-3/index.json")
            assert index_problems(index) == []
            games = [await get(f"round-3/game-{i}.json") for i in (1, 2, 3)]
    for doc in games:
        assert game_problems(doc) == [], doc
    playing, finished, waiting = games
    assert playing["live"] is True and playing["clock"] is not None
    ts = dt.datetime.fromisoformat(last["ts"].replace("Z", "+00:00"))
    assert playing["clock"]["time"] == round(ts.timestamp() * 1000)  # when the clocks shown were read
    assert playing["clock"]["white"] == (180_000 - 3_100 * 4) // 1000
    assert sans(playing) == LIVE and sans(finished) == MATE and waiting["moves"] == []
    assert finished["result"] == "BLACKWIN" and finished["clock"] is None
