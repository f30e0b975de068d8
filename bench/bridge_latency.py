"""Bridge benchmark (a script, not a test): latency and boards served by one `touchmove run` daemon.

    .venv/bin/python bench/bridge_latency.py [--boards 1,100,500,1000] [--seconds 40] [--settle-ms 200]
                                             [--flood dgt-fields,dgt-bytes,...] [--flood-rate 200]

For each board count: a private Mosquitto, the daemon as its own process with one pseudo-terminal per board,
a simulator process playing every board at blitz pace (a move every 3-7 s per board, each piece held 0.2-0.6 s,
captures victim first, a heartbeat per board every second, as the firmware sends), and a subscriber.

Latency = from the moment the simulator has written a move's last ``place`` to the serial side, to the moment
the subscriber receives that ply's ``move`` event from the broker. The engine holds every move for its settle
time (``settle_ms``: a piece resting less than that was sliding through) before it commits it, so the figure
is reported as the total and as the overhead above the settle time.

``--flood``: beside the boards measured, vendor boards gone wrong (:mod:`touchmove.sim.flood`, one per kind
given, each on a pty of its own) flood the same bridge for the whole run at ``--flood-rate`` messages a second:
the latency of the boards alongside says whether a flooding board delays the others.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tty
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import paho.mqtt.client as mqtt
from figures import Run

from touchmove.sim.flood import KINDS
from touchmove.sim.ptyboard import PtyBoard

REPO = Path(__file__).resolve().parents[1]
OPERA = REPO / "host" / "touchmove" / "data" / "opera-1858.pgn"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def raise_fd_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def opera_moves() -> list[chess.Move]:
    with open(OPERA) as fh:
        game = chess.pgn.read_game(fh)
    assert game is not None
    return list(game.mainline_moves())


def move_steps(board: chess.Board, move: chess.Move) -> list[tuple[str, int]]:
    """The sensor changes of a move: victim first on captures, king first when castling."""
    if board.is_castling(move):
        rank = chess.square_rank(move.from_square)
        king_side = board.is_kingside_castling(move)
        return [("lift", move.from_square), ("place", chess.square(6 if king_side else 2, rank)),
                ("lift", chess.square(7 if king_side else 0, rank)),
                ("place", chess.square(5 if king_side else 3, rank))]
    if board.is_en_passant(move):
        return [("lift", move.to_square + (-8 if board.turn else 8)), ("lift", move.from_square),
                ("place", move.to_square)]
    steps = [("lift", move.to_square)] if board.piece_at(move.to_square) else []
    return [*steps, ("lift", move.from_square), ("place", move.to_square)]


# -- the simulator (its own process) ------------------------------------------------------------------------------
def simulate(masters: list[int], boards: list[str], seconds: float, out: Any, ready: Any, seed: int) -> None:
    asyncio.run(_simulate(masters, boards, seconds, out, ready, seed))


async def _simulate(masters: list[int], boards: list[str], seconds: float, out: Any, ready: Any, seed: int) -> None:
    loop = asyncio.get_running_loop()
    for fd in masters:                       # drain what the daemon sends (hello, snapshot, leds)
        os.set_blocking(fd, False)

        def drain(fd: int = fd) -> None:
            try:
                os.read(fd, 65536)
            except OSError:
                loop.remove_reader(fd)
        loop.add_reader(fd, drain)
    moves = opera_moves()
    t0 = time.monotonic()
    places: dict[str, float] = {}
    seqs = [0] * len(boards)

    def send(i: int, kind: str, **fields: Any) -> float:
        msg = {"seq": seqs[i], "t": int((time.monotonic() - t0) * 1000), "type": kind, **fields}
        seqs[i] += 1
        data = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
        with contextlib.suppress(BlockingIOError):
            os.write(masters[i], data)
        return time.monotonic()

    start_occ = chess.BB_RANK_1 | chess.BB_RANK_2 | chess.BB_RANK_7 | chess.BB_RANK_8
    for i, board_id in enumerate(boards):
        send(i, "hello", proto=1, fw="bench", board=board_id, boot=f"{seed:08x}")
        send(i, "snapshot", occ=f"{start_occ:016x}")
    ready.wait()                             # the daemon has every board
    start = time.monotonic()
    rng = random.Random(seed)
    occupancy = [start_occ] * len(boards)

    async def player(i: int) -> None:
        board = chess.Board()
        await asyncio.sleep(rng.uniform(0.5, 5.0))
        for ply, move in enumerate(moves, start=1):
            if time.monotonic() - start > seconds:
                return
            for kind, sq in move_steps(board, move):
                bit = chess.BB_SQUARES[sq]
                occupancy[i] = occupancy[i] & ~bit if kind == "lift" else occupancy[i] | bit
                at = send(i, kind, sq=chess.square_name(sq))
                await asyncio.sleep(rng.uniform(0.2, 0.6) if kind == "lift" else 0.05)
            places[f"{boards[i]}/{ply}"] = at
            board.push(move)
            await asyncio.sleep(rng.uniform(3.0, 7.0))

    async def heartbeats() -> None:
        while time.monotonic() - start < seconds + 3:
            for i in range(len(boards)):
                send(i, "heartbeat", occ=f"{occupancy[i]:016x}")
            await asyncio.sleep(1.0)

    beat = asyncio.create_task(heartbeats())
    await asyncio.gather(*(player(i) for i in range(len(boards))))
    await asyncio.sleep(2.0)
    beat.cancel()
    out.put(places)


# -- one run ----------------------------------------------------------------------------------------------------
def run(n: int, seconds: float, settle_ms: int, workdir: Path, floods: tuple[str, ...] = (),
        flood_rate: float = 200.0) -> dict[str, Any]:
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    port = free_port()
    conf = workdir / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 100000\n"
                    "set_tcp_nodelay true\n")
    broker = subprocess.Popen([mosquitto, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    # the subscriber first: paho's network thread uses select(), which fails for descriptors above 1023
    received: dict[str, float] = {}
    online: set[str] = set()
    lock = threading.Lock()

    def on_message(client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        now = time.monotonic()
        board = msg.topic.split("/")[2]
        if msg.topic.endswith("/availability"):
            if board[1:].isdigit():      # a board measured (not a flooding one)
                with lock:
                    online.add(board)
            return
        ev = json.loads(msg.payload)
        if ev.get("type") == "move":
            with lock:
                received.setdefault(f"{board}/{ev['ply']}", now)

    sub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="bench-sub")
    sub.on_message = on_message
    sub.on_connect = lambda c, *a: (c.subscribe("touchmove/boards/+/events", qos=1),
                                    c.subscribe("touchmove/boards/+/availability", qos=1))
    sub.connect("127.0.0.1", port)
    sub.loop_start()
    time.sleep(0.3)

    boards = [f"b{i:04d}" for i in range(n)]
    masters, slaves = [], []
    for i in range(n):
        master, slave = os.openpty()
        tty.setraw(slave)
        os.symlink(os.ttyname(slave), workdir / f"tty-{boards[i]}")
        masters.append(master)
        slaves.append(slave)
    config = workdir / "bridge.toml"
    vendor = "".join(f'  {{ port = "{workdir}/flood-{protocol}-*", protocol = "{protocol}" }},\n'
                     for protocol in sorted({kind.split("-")[0] for kind in floods}))
    config.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{port}"\nqueue_size = 100000\n[serial]\n'
                      f'ports = ["{workdir}/tty-*"]\nrescan_s = 1.0\n'
                      + (f"boards = [\n{vendor}]\n" if floods else "")
                      + f'[engine]\nsettle_ms = {settle_ms}\n[journal]\npath = "{workdir}/journal.sqlite3"\n')
    flooding = [PtyBoard([sys.executable, "-m", "touchmove.sim.flood", kind, "--rate", str(flood_rate),
                          "--seconds", str(seconds + 30), "--after", "0", "--serial", f"{90000 + i}",
                          "--seed", str(i)], str(workdir / f"flood-{kind.split('-')[0]}-{i}"))
                for i, kind in enumerate(floods)]
    for board in flooding:
        board.plug()
        board.start()

    debug = {"PYTHONASYNCIODEBUG": "1"} if os.environ.get("BENCH_DEBUG") else {}
    log = open(workdir / "daemon.log", "wb")  # noqa: SIM115 - closed after the daemon ends
    daemon = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config", str(config),
                               "--log-level", os.environ.get("BENCH_LOG", "WARNING")], cwd=REPO, stdout=log,
                              stderr=subprocess.STDOUT, preexec_fn=raise_fd_limit, env=dict(os.environ, **debug))
    ctx = mp.get_context("fork")
    out, ready = ctx.Queue(), ctx.Event()
    sim = ctx.Process(target=simulate, args=(masters, boards, seconds, out, ready, 1858))
    sim.start()
    try:
        deadline = time.monotonic() + 60
        while len(online) < n and time.monotonic() < deadline:
            time.sleep(0.1)
        served = len(online)
        ready.set()
        cpu0 = _cpu(daemon.pid)
        places: dict[str, float] = out.get(timeout=seconds + 120)
        cpu = _cpu(daemon.pid) - cpu0
        sim.join(10)
        time.sleep(1.0)
    finally:
        for board in flooding:
            board.stop()
        if sim.is_alive():
            sim.kill()
        daemon.terminate()
        try:
            daemon.wait(20)
        except subprocess.TimeoutExpired:
            daemon.kill()
        log.close()
        sub.loop_stop()
        broker.terminate()
        broker.wait(5)
        for fd in masters + slaves:
            os.close(fd)
    lat = sorted((received[k] - t) * 1000 for k, t in places.items() if k in received)
    lost = sum(1 for k in places if k not in received)
    return {"boards": n, "served": served, "moves": len(places), "lost": lost, "cpu_s": cpu,
            "p50": statistics.median(lat) if lat else float("nan"),
            "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan"),
            "max": lat[-1] if lat else float("nan"), "seconds": seconds}


def _cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", default="1,100,500,1000")
    parser.add_argument("--seconds", type=float, default=40.0, help="playing time per run")
    parser.add_argument("--settle-ms", type=int, default=200)
    parser.add_argument("--flood", default="", help="kinds of flooding vendor boards beside them (comma-separated: "
                        f"{', '.join(KINDS)})")
    parser.add_argument("--flood-rate", type=float, default=200.0, help="messages a second per flooding board")
    args = parser.parse_args()
    floods = tuple(k for k in args.flood.split(",") if k)
    if set(floods) - set(KINDS):
        parser.error(f"--flood: unknown kind(s) {', '.join(sorted(set(floods) - set(KINDS)))}")
    raise_fd_limit()
    fig = Run("bridge_latency" + ("_flood" if floods else ""))
    if floods:
        fig.note(f"beside {len(floods)} flooding board(s) ({', '.join(floods)}, {args.flood_rate:g}/s each)")
    print(f"settle time {args.settle_ms} ms; latency = last place written -> move received by a subscriber"
          + (f"; beside {len(floods)} flooding board(s) ({', '.join(floods)}, {args.flood_rate:g}/s each)"
             if floods else ""))
    print(f"{'boards':>6} {'served':>6} {'moves':>6} {'lost':>4} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'p99-settle':>10} {'daemon CPU':>10}")
    for n in (int(x) for x in args.boards.split(",")):
        with tempfile.TemporaryDirectory(prefix="touchmove-bench-") as tmp:
            if os.environ.get("BENCH_DEBUG") or os.environ.get("BENCH_KEEP"):
                tmp = tempfile.mkdtemp(prefix="touchmove-bench-keep-")
            r = run(n, args.seconds, args.settle_ms, Path(tmp), floods, args.flood_rate)
        print(f"{r['boards']:>6} {r['served']:>6} {r['moves']:>6} {r['lost']:>4} {r['p50']:>8.1f} {r['p99']:>8.1f} "
              f"{r['max']:>8.1f} {r['p99'] - args.settle_ms:>10.1f} {100 * r['cpu_s'] / r['seconds']:>9.0f}%",
              flush=True)
        row = f"{r['boards']:,} board{'s' if r['boards'] != 1 else ''}"
        fig.add("served", r["served"], group=row)
        fig.add("moves", r["moves"], group=row)
        fig.add("lost", r["lost"], group=row)
        fig.add_latency(r, row)
        fig.add("p99 − settle", round(r["p99"] - args.settle_ms, 1), "ms", group=row)
        fig.add("daemon CPU", round(100 * r["cpu_s"] / r["seconds"]), "% of a core", group=row)
    fig.note(f"{args.seconds:g} s of play a row; latency: last place written → move received, the {args.settle_ms} ms "
             "settle time included")
    fig.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
