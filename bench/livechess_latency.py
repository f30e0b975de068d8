"""LiveChess feed latency: simulated bridges -> Mosquitto -> ``touchmove livechess`` -> websocket clients.

Prints figures; not a test. The server runs as its own process (``touchmove livechess --broker``), as in
production; this process plays the boards (one simulated bridge on a private Mosquitto publishing what a bridge
does per move: the move event, the retained state and PGN) and holds the clients: each connects to
``/api/v1.0``, asks for ``eboards`` and subscribes to every board. Latency is, per move and client, from
publishing the move event to the client reading the feed that shows the move's position (``board``). A plain
MQTT subscriber in this process gives the reference (broker and benchmark process alone).

A piece's placement becomes the move event after the bridge's settle time and its own work (``bench/README.md``,
"Bridge latency"); add that to these figures for placement -> websocket.

    .venv/bin/python bench/livechess_latency.py                       # 1, 20 and 200 boards, 10 clients, 30 s
    .venv/bin/python bench/livechess_latency.py --boards 200 --clients 10 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import aiomqtt

from touchmove import wire
from touchmove.sim.broadcast_boards import SimBoard, SimBridge
from touchmove.sim.local_broker import LocalBroker, free_port

REPO = Path(__file__).resolve().parents[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


class Clock:
    """When each board's positions were published (board, placement) -> monotonic time; the first time only."""

    def __init__(self) -> None:
        self.published: dict[tuple[str, str], float | None] = {}
        self.feeds: list[float] = []
        self.reference: list[float] = []
        self.missed = 0


async def client(url: str, boards: list[str], clock: Clock, ready: asyncio.Event, stop: asyncio.Event) -> None:
    async with aiohttp.ClientSession() as session, session.ws_connect(url, max_msg_size=0) as ws:
        await ws.send_str('{"id":1,"call":"eboards"}')
        listed = json.loads(await ws.receive_str())
        assert {b["serialnr"] for b in listed["param"]} >= set(boards), "the server does not list every board"
        for n, board in enumerate(boards, 1):
            await ws.send_str(json.dumps({"id": 2, "call": "subscribe", "param": {
                "feed": "eboardevent", "id": n, "param": {"serialnr": board}}}))
        ready.set()
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                message = await ws.receive(timeout=0.5)
                if message.type != aiohttp.WSMsgType.TEXT:
                    break
                data = json.loads(message.data)
                if data.get("response") != "feed":
                    continue
                at = clock.published.get((data["param"]["serialnr"], data["param"]["board"]))
                if at is not None:
                    clock.feeds.append(time.monotonic() - at)


async def reference(port: int, base: str, clock: Clock, ready: asyncio.Event) -> None:
    async with aiomqtt.Client("127.0.0.1", port, identifier=f"bench-ref-{os.getpid()}") as mqtt:
        await mqtt.subscribe(wire.board_topic(base, "+", "events"), qos=1)
        ready.set()
        async for message in mqtt.messages:
            event = json.loads(bytes(message.payload))  # type: ignore[arg-type]
            if event.get("type") == "move":
                at = clock.published.get((event["board"], str(event["fen"]).split(" ")[0]))
                if at is not None:
                    clock.reference.append(time.monotonic() - at)


async def play(board: SimBoard, rng: random.Random, clock: Clock, until: float, pace: tuple[float, float]) -> None:
    while time.monotonic() < until:
        await asyncio.sleep(rng.uniform(*pace))
        if board.position.is_game_over() or board.ply >= 120:
            await board.start()
            continue
        move = rng.choice(list(board.position.legal_moves))
        after = board.position.copy()
        after.push(move)
        key = (board.board_id, after.board_fen())
        # a position seen before in this run is not timed (its feed cannot be told from the earlier one's)
        clock.published[key] = None if key in clock.published else time.monotonic()
        await board.move(move.uci())


async def run_one(boards: int, clients: int, seconds: float, pace: tuple[float, float], seed: int) -> dict[str, float]:
    base = "bench"
    with LocalBroker() as broker, tempfile.TemporaryDirectory(prefix="touchmove-livechess-bench-") as tmp:
        port = free_port()
        log = open(Path(tmp) / "livechess.log", "ab")  # noqa: SIM115 - closed below
        server = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "livechess", "--broker", broker.url,
                                   "--base", base, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
                                  cwd=REPO)
        clock = Clock()
        try:
            async with aiomqtt.Client("127.0.0.1", broker.port, identifier=f"bench-sim-{os.getpid()}",
                                      max_queued_outgoing_messages=100_000) as mqtt:
                bridge = SimBridge(mqtt, base, publish_pgn=True)
                ids = [f"board-{i:03d}" for i in range(1, boards + 1)]
                sims = [bridge.board(board_id) for board_id in ids]
                await bridge.online()
                for sim in sims:
                    await sim.start()
                url = f"ws://127.0.0.1:{port}/api/v1.0"
                async with aiohttp.ClientSession() as http:
                    deadline = time.monotonic() + 30
                    while True:
                        with contextlib.suppress(aiohttp.ClientError):
                            async with http.get(f"http://127.0.0.1:{port}/api/v1.0/eboards") as resp:
                                if len(await resp.json()) == boards:
                                    break
                        if time.monotonic() > deadline:
                            raise SystemExit(f"the server did not list {boards} boards within 30 s")
                        await asyncio.sleep(0.2)
                stop = asyncio.Event()
                readies = [asyncio.Event() for _ in range(clients + 1)]
                tasks = [asyncio.create_task(client(url, ids, clock, readies[i], stop)) for i in range(clients)]
                tasks.append(asyncio.create_task(reference(broker.port, base, clock, readies[-1])))
                async with asyncio.timeout(60):
                    for ready in readies:
                        await ready.wait()
                await asyncio.sleep(1.0)       # the subscriptions' first feeds
                rng = random.Random(seed)
                until = time.monotonic() + seconds
                cpu_before = cpu_seconds(server.pid)
                await asyncio.gather(*(play(sim, random.Random(rng.random()), clock, until, pace) for sim in sims))
                await asyncio.sleep(2.0)       # the last feeds
                cpu = cpu_seconds(server.pid) - cpu_before
                stop.set()
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
        finally:
            server.terminate()
            server.wait(10)
            log.close()
    moves = sum(1 for at in clock.published.values() if at is not None)
    expected = moves * clients
    return {"boards": boards, "clients": clients, "moves": moves, "rate": moves / seconds,
            "feeds": len(clock.feeds), "missing": expected - len(clock.feeds),
            "p50": pct(clock.feeds, 50) * 1000, "p99": pct(clock.feeds, 99) * 1000,
            "max": max(clock.feeds, default=float("nan")) * 1000,
            "ref50": pct(clock.reference, 50) * 1000, "ref99": pct(clock.reference, 99) * 1000,
            "cpu_ms": cpu * 1000 / max(1, moves)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="1,20,200", help="board counts, comma separated")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    logging.getLogger("mqtt").setLevel(logging.ERROR)  # aiomqtt's "pending publish calls" notes
    print(f"{'boards':>6} {'clients':>7} {'moves':>6} {'moves/s':>7} {'feeds':>6} {'missing':>7} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'ref p50':>7} {'ref p99':>7} {'CPU/move':>8}", flush=True)
    for boards in (int(b) for b in args.boards.split(",")):
        # one board plays fast enough to give figures; more boards at blitz pace (a ply every 2-8 s each)
        pace = (0.25, 0.75) if boards == 1 else (2.0, 8.0)
        r = asyncio.run(run_one(boards, args.clients, args.seconds, pace, args.seed))
        print(f"{r['boards']:>6} {r['clients']:>7} {r['moves']:>6} {r['rate']:>7.1f} {r['feeds']:>6} "
              f"{r['missing']:>7} {r['p50']:>7.1f} {r['p99']:>7.1f} {r['max']:>7.1f} {r['ref50']:>7.1f} "
              f"{r['ref99']:>7.1f} {r['cpu_ms']:>6.2f}ms", flush=True)


if __name__ == "__main__":
    main()
