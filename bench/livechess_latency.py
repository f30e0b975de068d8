"""LiveChess feed latency: a piece's placement (or a bridge's move event) -> ``touchmove livechess`` -> websockets.

Prints figures; not a test. The server runs as its own process (``touchmove livechess --broker``), as in
production, with 10 websocket clients in this process: each connects to ``/api/v1.0``, asks for ``eboards`` and
subscribes to every board. Two paths (``--from``):

``placement`` (default)
    the real bridge (``touchmove run``, its own process, one pseudo-terminal per board) and the simulator of
    ``bench/bridge_latency.py`` (its own process: every board plays the Opera Game at blitz pace, a move every
    3-7 s, pieces held 0.2-0.6 s, heartbeats); latency is from writing a move's last ``place`` to the serial
    side to a client reading the feed that shows the move's position. It includes the bridge's settle time
    (``settle_ms`` = 200: a move is committed once its piece has rested that long).
``event``
    one simulated bridge in this process publishing what a bridge does per move (the move event, the retained
    state and PGN) at a ply every 2-8 s per board (every 0.25-0.75 s for one board); latency is from publishing
    the move event to the feed, with a plain MQTT subscriber in this process as the reference.

    .venv/bin/python bench/livechess_latency.py                           # placement, 1, 20 and 200 boards
    .venv/bin/python bench/livechess_latency.py --from event --boards 200 --seconds 60
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
from typing import Any

import aiohttp
import aiomqtt
import chess
from figures import Run

from touchmove.mqtt import wire
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


# -- from a piece's placement: the real bridge and bridge_latency's simulator --------------------------------------
async def placement_clients(port: int, boards: list[str], clients: int, ready: Any, out: Any, seconds: float
                            ) -> tuple[dict[str, float], list[tuple[int, str, str, float]], float]:
    """Connect the clients once every board is listed, let the simulator play, collect every feed; return the
    simulator's place times, the feeds (client, board, placement, time) and the server's CPU seconds."""
    async with aiohttp.ClientSession() as http:
        deadline = time.monotonic() + 90
        while True:
            with contextlib.suppress(aiohttp.ClientError, ValueError):
                async with http.get(f"http://127.0.0.1:{port}/api/v1.0/eboards") as resp:
                    listed = await resp.json()
                if sum(1 for b in listed if b["state"] == "ACTIVE") >= len(boards):
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"the server did not list {len(boards)} active boards within 90 s")
            await asyncio.sleep(0.2)
    feeds: list[tuple[int, str, str, float]] = []
    stop = asyncio.Event()
    readies = [asyncio.Event() for _ in range(clients)]

    async def one(number: int) -> None:
        async with aiohttp.ClientSession() as session, \
                session.ws_connect(f"ws://127.0.0.1:{port}/api/v1.0", max_msg_size=0) as ws:
            for n, board in enumerate(boards, 1):
                await ws.send_str(json.dumps({"id": 2, "call": "subscribe", "param": {
                    "feed": "eboardevent", "id": n, "param": {"serialnr": board}}}))
            readies[number].set()
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    message = await ws.receive(timeout=0.5)
                    if message.type != aiohttp.WSMsgType.TEXT:
                        break
                    now = time.monotonic()
                    data = json.loads(message.data)
                    if data.get("response") == "feed":
                        feeds.append((number, data["param"]["serialnr"], data["param"]["board"], now))

    tasks = [asyncio.create_task(one(i)) for i in range(clients)]
    for event in readies:
        await event.wait()
    await asyncio.sleep(1.0)
    cpu_before = cpu_seconds(SERVER_PID[0])
    ready.set()
    places: dict[str, float] = await asyncio.get_running_loop().run_in_executor(None, out.get, True, seconds + 120)
    await asyncio.sleep(1.0)
    cpu = cpu_seconds(SERVER_PID[0]) - cpu_before
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return places, feeds, cpu


SERVER_PID = [0]


def run_placement(n: int, clients: int, seconds: float, settle_ms: int) -> dict[str, float]:
    import multiprocessing as mp
    import shutil
    import tty

    from bridge_latency import opera_moves, raise_fd_limit, simulate

    raise_fd_limit()
    positions = {}
    board = chess.Board()
    for ply, move in enumerate(opera_moves(), 1):
        board.push(move)
        positions[board.board_fen()] = ply
    with tempfile.TemporaryDirectory(prefix="touchmove-livechess-bench-") as tmp:
        workdir = Path(tmp)
        mqtt_port, port = free_port(), free_port()
        conf = workdir / "mosquitto.conf"
        conf.write_text(f"listener {mqtt_port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 100000\n"
                        "set_tcp_nodelay true\n")
        broker = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", str(conf)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        boards = [f"b{i:04d}" for i in range(n)]
        masters, slaves = [], []
        for board_id in boards:
            master, slave = os.openpty()
            tty.setraw(slave)
            os.symlink(os.ttyname(slave), workdir / f"tty-{board_id}")
            masters.append(master)
            slaves.append(slave)
        config = workdir / "bridge.toml"
        config.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{mqtt_port}"\nqueue_size = 100000\n[serial]\n'
                          f'ports = ["{workdir}/tty-*"]\nrescan_s = 1.0\n[engine]\nsettle_ms = {settle_ms}\n'
                          f'[journal]\npath = "{workdir}/journal.sqlite3"\n')
        logs = open(workdir / "processes.log", "wb")  # noqa: SIM115 - closed below
        daemon = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config", str(config),
                                   "--log-level", "WARNING"], cwd=REPO, stdout=logs, stderr=subprocess.STDOUT,
                                  preexec_fn=raise_fd_limit)
        server = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "livechess", "--broker",
                                   f"mqtt://127.0.0.1:{mqtt_port}", "--port", str(port)], cwd=REPO, stdout=logs,
                                  stderr=subprocess.STDOUT)
        SERVER_PID[0] = server.pid
        ctx = mp.get_context("fork")
        out, ready = ctx.Queue(), ctx.Event()
        sim = ctx.Process(target=simulate, args=(masters, boards, seconds, out, ready, 1858))
        sim.start()
        try:
            places, feeds, cpu = asyncio.run(placement_clients(port, boards, clients, ready, out, seconds))
            sim.join(10)
        finally:
            if sim.is_alive():
                sim.kill()
            for proc in (server, daemon, broker):
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            logs.close()
            for fd in masters + slaves:
                os.close(fd)
    first: dict[tuple[int, str, int], float] = {}
    for client_number, board_id, placement, at in feeds:
        ply = positions.get(placement)
        if ply is not None:
            first.setdefault((client_number, board_id, ply), at)
    lat = [(at - places[f"{board_id}/{ply}"]) * 1000 for (_, board_id, ply), at in first.items()
           if f"{board_id}/{ply}" in places]
    expected = len(places) * clients
    return {"boards": n, "clients": clients, "moves": len(places), "rate": len(places) / seconds,
            "feeds": len(lat), "missing": expected - len(lat), "p50": pct(lat, 50), "p99": pct(lat, 99),
            "max": max(lat, default=float("nan")), "ref50": float("nan"), "ref99": float("nan"),
            "cpu_ms": cpu * 1000 / max(1, len(places))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="1,20,200", help="board counts, comma separated")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--from", dest="start", choices=("placement", "event"), default="placement",
                        help="time from a piece's placement (the real bridge) or from the move event")
    parser.add_argument("--settle-ms", type=int, default=200, help="the bridge's settle time (placement)")
    args = parser.parse_args()
    logging.getLogger("mqtt").setLevel(logging.ERROR)  # aiomqtt's "pending publish calls" notes
    fig = Run(f"livechess_latency_{args.start}")
    fig.note(f"from the {'placement of a piece (the real bridge)' if args.start == 'placement' else 'move event'} "
             f"to a client reading its feed; {args.seconds:g} s a row")
    print(f"{'boards':>6} {'clients':>7} {'moves':>6} {'moves/s':>7} {'feeds':>6} {'missing':>7} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'ref p50':>7} {'ref p99':>7} {'CPU/move':>8}", flush=True)
    for boards in (int(b) for b in args.boards.split(",")):
        # one board plays fast enough to give figures; more boards at blitz pace (a ply every 2-8 s each)
        pace = (0.25, 0.75) if boards == 1 else (2.0, 8.0)
        if args.start == "placement":
            r = run_placement(boards, args.clients, args.seconds, args.settle_ms)
        else:
            r = asyncio.run(run_one(boards, args.clients, args.seconds, pace, args.seed))
        print(f"{r['boards']:>6} {r['clients']:>7} {r['moves']:>6} {r['rate']:>7.1f} {r['feeds']:>6} "
              f"{r['missing']:>7} {r['p50']:>7.1f} {r['p99']:>7.1f} {r['max']:>7.1f} {r['ref50']:>7.1f} "
              f"{r['ref99']:>7.1f} {r['cpu_ms']:>6.2f}ms", flush=True)
        row = f"{r['boards']:,} board{'s' if r['boards'] != 1 else ''}, {r['clients']} clients"
        fig.add("moves", r["moves"], group=row)
        fig.add("feeds", r["feeds"], group=row)
        fig.add("missing", r["missing"], group=row)
        fig.add_latency(r, row)
        if args.start == "event":
            fig.add("reference p50 / p99", f"{r['ref50']:.1f} / {r['ref99']:.1f}", "ms", group=row)
        fig.add("server CPU a move", round(r["cpu_ms"], 2), "ms", group=row)
    fig.write()


if __name__ == "__main__":
    main()
