"""Broadcast latency: simulated boards at blitz pace -> Mosquitto -> ``touchmove broadcast`` -> HTTP / SSE.

Prints figures; not a test. The broadcaster runs as its own process (``touchmove broadcast --config``),
as in production; this process plays the bridges (several bases on one private Mosquitto, each publishing
what a bridge does per move: the move event, a clock event, the retained state and the retained PGN) and
measures, for every move, the time from publishing its event to

* the round PGN served at ``/round/N.pgn`` containing it (a poller fetching it back to back; the time
  taken is when the response that first shows the move has been read, so it includes one poll), and
* the dashboard's event stream (``/api/stream``, server-sent events) delivering the board update.

    .venv/bin/python bench/broadcast_latency.py                  # 200 boards, 60 s
    .venv/bin/python bench/broadcast_latency.py --boards 50 --seconds 20
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import aiomqtt
from figures import Run

from touchmove.sim.broadcast_boards import SimBoard, SimRound, round_toml
from touchmove.sim.local_broker import LocalBroker, free_port

COMMENT = re.compile(r"\{[^}]*\}")
ROUND = re.compile(r'\[Round "\d+\.(\d+)"\]')
MOVE_NUMBER = re.compile(r"^\d+\.+$")
RESULTS = {"1-0", "0-1", "1/2-1/2", "*"}
EVENT_PLY = re.compile(rb'"ply":(\d+),')
BOARD_PLY = re.compile(rb'"board":(\d+),.*?"ply":(\d+),')


def game_plies(chunk: str) -> tuple[int, int] | None:
    """(board number, plies) of one game's PGN text, read quickly (no python-chess: the poller must keep up)."""
    m = ROUND.search(chunk)
    if not m:
        return None
    head_end = chunk.find("\n\n")
    moves = COMMENT.sub(" ", chunk[head_end:]) if head_end >= 0 else ""
    return int(m.group(1)), sum(1 for tok in moves.split() if tok not in RESULTS and not MOVE_NUMBER.match(tok))


class PlyCounter:
    """Plies per board of successive round PGNs, re-reading only the games whose text changed."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.plies: dict[int, int] = {}

    def update(self, pgn: str) -> dict[int, int]:
        chunks = pgn.split("\n\n[Event ")
        for i, chunk in enumerate(chunks):
            if i < len(self.chunks) and self.chunks[i] == chunk:
                continue
            found = game_plies(chunk)
            if found:
                self.plies[found[0]] = found[1]
        self.chunks = chunks
        return self.plies


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (Linux ``/proc``; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(args: argparse.Namespace) -> None:
    fig = Run("broadcast_latency")
    rng = random.Random(args.seed)
    with LocalBroker() as broker, tempfile.TemporaryDirectory(prefix="touchmove-bench-") as tmp:
        config = Path(tmp) / "tournament.toml"
        config.write_text(round_toml("Latency bench", args.boards, args.bridges, broker.port, Path(tmp) / "out"))
        http_port = free_port()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        profile = ["-m", "cProfile", "-o", args.profile] if args.profile else []
        proc = subprocess.Popen([sys.executable, *profile, "-m", "touchmove.cli", "broadcast", "--config",
                                 str(config), "--port", str(http_port)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
        base_url = f"http://127.0.0.1:{http_port}"
        published: dict[tuple[int, int], float] = {}
        pgn_seen: dict[tuple[int, int], float] = {}
        sse_seen: dict[tuple[int, int], float] = {}
        mqtt_seen: dict[tuple[int, int], float] = {}
        svg_seen: dict[tuple[int, int], float] = {}
        polls: list[float] = []
        stop = asyncio.Event()
        cpu_used = float("nan")
        try:
            async with aiohttp.ClientSession() as http:
                for _ in range(200):
                    try:
                        async with http.get(f"{base_url}/api/state?svg=0") as resp:
                            if resp.status == 200:
                                break
                    except aiohttp.ClientError:
                        pass
                    await asyncio.sleep(0.05)
                await asyncio.sleep(1.0)  # let it subscribe

                async def sse() -> None:
                    async with http.get(f"{base_url}/api/stream",
                                        timeout=aiohttp.ClientTimeout(total=None)) as resp:
                        buffer = b""
                        async for chunk in resp.content.iter_any():
                            now = time.perf_counter()
                            buffer += chunk
                            *messages, buffer = buffer.split(b"\n\n")
                            for message in messages:
                                if message.startswith(b"event: board\n"):
                                    seen = sse_seen
                                elif message.startswith(b"event: svg\n"):
                                    seen = svg_seen
                                else:
                                    continue
                                m = BOARD_PLY.search(message)
                                if m:
                                    seen.setdefault((int(m.group(1)), int(m.group(2))), now)

                async def mqtt_reference() -> None:
                    """A plain subscriber beside the broadcaster: what the broker alone takes."""
                    async with aiomqtt.Client("127.0.0.1", broker.port) as sub:
                        await sub.subscribe("+/boards/+/events", qos=1)
                        ready.set()
                        async for message in sub.messages:
                            now = time.perf_counter()
                            raw = message.payload
                            if isinstance(raw, bytes | bytearray) and b'"type":"move"' in raw:
                                m = EVENT_PLY.search(raw)
                                if m:
                                    board = int(str(message.topic).split("/")[2].split("-")[1])
                                    mqtt_seen.setdefault((board, int(m.group(1))), now)

                async def poll() -> None:
                    known: dict[int, int] = {}
                    counter = PlyCounter()
                    last = ""
                    while not stop.is_set():
                        t0 = time.perf_counter()
                        async with http.get(f"{base_url}/round/1.pgn") as resp:
                            text = await resp.text()
                        now = time.perf_counter()
                        polls.append(now - t0)
                        if text == last:
                            await asyncio.sleep(args.poll_pause)
                            continue
                        last = text
                        for board, plies in counter.update(text).items():
                            for ply in range(known.get(board, 0) + 1, plies + 1):
                                pgn_seen.setdefault((board, ply), now)
                            known[board] = plies
                        await asyncio.sleep(args.poll_pause)

                async def play(sim_board: SimBoard, number: int, deadline: float) -> None:
                    await asyncio.sleep(rng.uniform(0, args.ply_max))
                    while time.perf_counter() < deadline and not sim_board.position.is_game_over():
                        await SimRound.random_move(sim_board, number, rng, published, time.perf_counter)
                        await asyncio.sleep(rng.uniform(args.ply_min, args.ply_max))

                async with SimRound(broker.port, boards=args.boards, bridges=args.bridges) as sim:
                    await sim.start()  # the round starts: every game at once
                    await asyncio.sleep(2.0)
                    ready = asyncio.Event()
                    ref_task = asyncio.create_task(mqtt_reference())
                    await ready.wait()
                    sse_task = asyncio.create_task(sse())
                    poll_task = asyncio.create_task(poll())
                    # the dashboard's first pictures (every board) are drawn before play starts
                    for _ in range(200):
                        if sum(1 for _, ply in svg_seen if ply == 0) >= args.boards:
                            break
                        await asyncio.sleep(0.05)
                    await asyncio.sleep(0.5)
                    cpu_start = process_cpu(proc.pid)
                    start = time.perf_counter()
                    deadline = start + args.seconds
                    await asyncio.gather(*(play(b, n, deadline) for b, n in sim.boards))
                    await asyncio.sleep(2.0)  # the last moves come through
                    cpu_used = process_cpu(proc.pid) - cpu_start
                    stop.set()
                    await poll_task
                    sse_task.cancel()
                    ref_task.cancel()
                    await asyncio.gather(sse_task, ref_task, return_exceptions=True)
                    await sim.clear_retained()
        finally:
            proc.terminate()
            proc.wait(30)

    moves = [k for k in published if k[1] > 0]
    pgn_lat = [(pgn_seen[k] - published[k]) * 1000 for k in moves if k in pgn_seen]
    sse_lat = [(sse_seen[k] - published[k]) * 1000 for k in moves if k in sse_seen]
    svg_lat = [(svg_seen[k] - published[k]) * 1000 for k in moves if k in svg_seen]
    mqtt_lat = [(mqtt_seen[k] - published[k]) * 1000 for k in moves if k in mqtt_seen]
    rate = len(moves) / args.seconds
    print(f"boards {args.boards} on {args.bridges} bridges, {args.seconds:.0f} s, a ply every "
          f"{args.ply_min:g}-{args.ply_max:g} s per board: {len(moves)} moves ({rate:.1f}/s), "
          f"4 MQTT messages each")
    print(f"move event -> round PGN over HTTP: p50 {pct(pgn_lat, 50):.1f} ms, p99 {pct(pgn_lat, 99):.1f} ms, "
          f"max {max(pgn_lat, default=float('nan')):.1f} ms ({len(pgn_lat)}/{len(moves)} seen; "
          f"PGN fetch p50 {pct([p * 1000 for p in polls], 50):.1f} ms, {len(polls)} fetches)")
    print(f"move event -> dashboard update:  p50 {pct(sse_lat, 50):.1f} ms, p99 {pct(sse_lat, 99):.1f} ms, "
          f"max {max(sse_lat, default=float('nan')):.1f} ms ({len(sse_lat)}/{len(moves)} seen)")
    print(f"move event -> dashboard picture: p50 {pct(svg_lat, 50):.1f} ms, p99 {pct(svg_lat, 99):.1f} ms, "
          f"max {max(svg_lat, default=float('nan')):.1f} ms ({len(svg_lat)}/{len(moves)} seen; a picture "
          "skipped when the board moved on meanwhile)")
    print(f"reference, move event -> a plain MQTT subscriber: p50 {pct(mqtt_lat, 50):.1f} ms, "
          f"p99 {pct(mqtt_lat, 99):.1f} ms ({len(mqtt_lat)}/{len(moves)} seen)")
    if pgn_lat:
        print(f"mean PGN latency {statistics.fmean(pgn_lat):.1f} ms")
    if moves and cpu_used == cpu_used:
        print(f"broadcaster process CPU while playing: {cpu_used:.1f} s, {cpu_used * 1000 / len(moves):.2f} ms per "
              "move (the picture workers not included)")
    fig.add("boards", args.boards, group="moves")
    fig.add("moves", len(moves), group="moves")
    fig.add("moves a second", round(rate, 1), group="moves")
    for label, values in (("move event → round PGN served", pgn_lat), ("move event → console board update", sse_lat),
                          ("move event → console picture", svg_lat),
                          ("reference: move event → a plain MQTT subscriber", mqtt_lat)):
        fig.add("p50", round(pct(values, 50), 1), "ms", group=label)
        fig.add("p99", round(pct(values, 99), 1), "ms", group=label)
        fig.add("max", round(max(values, default=float("nan")), 1), "ms", group=label)
        fig.add("seen", f"{len(values)}/{len(moves)}", group=label)
    if moves and cpu_used == cpu_used:
        fig.add("broadcaster CPU a move", round(cpu_used * 1000 / len(moves), 2), "ms", group="moves")
    fig.write()
    if os.environ.get("BENCH_DEBUG"):
        t0 = min(published.values())
        worst = sorted(((pgn_seen[k] - published[k]) * 1000, published[k] - t0, k) for k in moves if k in pgn_seen)
        for lat, at, key in worst[-8:]:
            print(f"  {lat:.0f} ms for {key} published at +{at:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=int, default=200)
    parser.add_argument("--bridges", type=int, default=4, help="bridges (base topics) sharing the boards")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--ply-min", type=float, default=2.0, help="shortest pause between a board's plies")
    parser.add_argument("--ply-max", type=float, default=8.0, help="longest pause between a board's plies")
    parser.add_argument("--poll-pause", type=float, default=0.005, help="pause between PGN fetches (s)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", metavar="FILE", help="run the broadcaster under cProfile, stats to FILE")
    args = parser.parse_args()
    logging.getLogger("mqtt").setLevel(logging.ERROR)  # aiomqtt's "pending publish calls" notes
    if not LocalBroker.available():
        sys.exit("mosquitto is not installed (apt-get install mosquitto)")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
