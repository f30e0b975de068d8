"""Cluster benchmark (a script, not a test): many boards across several bridges, one broker or a 3-node
NATS cluster, into one broadcaster with consoles watching; latency from a piece placed to the move in the round
PGN and on the consoles' event streams, while each kind of cluster node is killed in turn.

    .venv/bin/python bench/cluster_latency.py [--boards 2000] [--bridges 8] [--broker nats] [--events-qos 0]

Per broker kind: the broker (three ``nats-server`` nodes with MQTT and JetStream, or one Mosquitto), the
bridges as their own processes (``touchmove run``, one pseudo-terminal per board, each bridge's first URL a
different node), the broadcaster as its own process (``touchmove broadcast``, on the third node), a simulator
process playing every board at blitz pace (``bridge_latency.py``'s: a move every 3-7 s, pieces held 0.2-0.6 s,
heartbeats), a poller fetching ``/round/1.pgn`` back to back and ``--viewers`` consoles reading the event stream
(``/api/stream?svg=0``). Latency = from the simulator writing a move's last ``place`` to the poller reading a
round PGN with that ply (PGN), or to a console's stream carrying the board at that ply (console); it includes
the engine's settle time. With the cluster, ``--kills`` nodes are killed (SIGKILL) one after another, each
restarted ``--down-for`` seconds later and given ``--between`` seconds before the next: the first bridge's
node, the ``$MQTT_msgs`` leader, JetStream's meta leader, the broadcaster's node. Moves placed from a kill until
the node serves again are reported per kill; every placed move must reach the PGN once (lost, duplicated).
``--events-qos 0`` (the default on NATS): the bridges publish events at QoS 0 on connections of their own and
the broadcaster keeps an events' standby connection (docs/changelog.md, *Events at QoS 0*). CPU per process in %
of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tty
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
from bridge_latency import raise_fd_limit, simulate
from broadcast_latency import PlyCounter, pct
from figures import Run

from touchmove.sim.clusterdemo import connected_node, rotated
from touchmove.sim.local_broker import free_port
from touchmove.sim.natscluster import NatsCluster

REPO = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


class CpuMeter:
    """CPU seconds per named process, summed over the processes a name had (a restarted node)."""

    def __init__(self) -> None:
        self.start: dict[tuple[str, int], float] = {}
        self.last: dict[tuple[str, int], float] = {}

    def watch(self, name: str, pid: int) -> None:
        self.start[(name, pid)] = self.last[(name, pid)] = cpu_seconds(pid)

    def sample(self) -> None:
        for key in self.start:
            value = cpu_seconds(key[1])
            if value:
                self.last[key] = value

    def per_name(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, first in self.start.items():
            out[key[0]] = out.get(key[0], 0.0) + self.last[key] - first
        return out


BOARD_PLY = re.compile(rb'"board":(\d+),.*?"ply":(\d+)')
KILL_KINDS = ("bridge-node", "stream-leader", "meta-leader", "broadcaster-node")


def tournament_toml(boards: list[str], bases: list[str], urls: list[str], out: Path, qos: int,
                    standby: bool) -> str:
    lines = ['event = "Cluster bench"', "round = 1", "", "[broadcast]", f'output_dir = "{out}"', 'token = "bench"',
             "", "[[brokers]]", f"urls = {json.dumps(urls)}", f"bases = {json.dumps(bases)}",
             f"subscribe_qos = {qos}", f"events_standby = {'true' if standby else 'false'}", "",
             "[[rounds]]", "number = 1", ""]
    for n, board in enumerate(boards, start=1):
        lines += ["[[rounds.boards]]", f"board = {n}", f'board_id = "{board}"', f'white = "White {n}"',
                  f'black = "Black {n}"', ""]
    return "\n".join(lines)


def run_one(kind: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster: NatsCluster | None = None
    mosquitto: subprocess.Popen[bytes] | None = None
    procs: list[subprocess.Popen[bytes]] = []
    meter = CpuMeter()
    if kind == "nats":
        cluster = NatsCluster(3, workdir=workdir / "nats")
        cluster.start()
        urls = cluster.mqtt_urls
        for i, node in enumerate(cluster.nodes):
            assert node.pid is not None
            meter.watch(f"nats-server n{i + 1}", node.pid)
    else:
        port = free_port()
        conf = workdir / "mosquitto.conf"
        conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 100000\n"
                        "set_tcp_nodelay true\npersistence false\n")
        mosquitto = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        meter.watch("mosquitto", mosquitto.pid)
        time.sleep(0.5)
        urls = [f"mqtt://127.0.0.1:{port}"]
    events_qos = args.events_qos if kind == "nats" else 1
    per = args.boards // args.bridges
    bases = [f"hall-{chr(97 + b)}" for b in range(args.bridges)]
    boards = [f"{bases[b]}-{i:03d}" for b in range(args.bridges) for i in range(per)]
    number = {board: n for n, board in enumerate(boards, start=1)}
    broadcaster_node = 2 % len(urls)
    (workdir / "t.toml").write_text(tournament_toml(boards, bases, rotated(urls, broadcaster_node), workdir / "out",
                                                    0 if kind == "nats" else 1, kind == "nats" and events_qos == 0))
    http_port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    bcast = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "broadcast", "--config", str(workdir / "t.toml"),
                              "--port", str(http_port)], stdout=(workdir / "broadcast.log").open("wb"),
                             stderr=subprocess.STDOUT, env=env)
    procs.append(bcast)
    meter.watch("broadcaster", bcast.pid)
    masters: list[int] = []
    for b, base in enumerate(bases):
        (workdir / base).mkdir()
        for i in range(per):
            master, slave = os.openpty()
            tty.setraw(slave)
            os.symlink(os.ttyname(slave), workdir / base / f"tty-{i:03d}")
            masters.append(master)
        (workdir / base / "bridge.toml").write_text(
            f'[mqtt]\nurls = {json.dumps(rotated(urls, b % len(urls)))}\nbase_topic = "{base}"\n'
            f'client_id = "bridge-{base}"\nkeepalive = 5\nqueue_size = 100000\nevents_qos = {events_qos}\n'
            f'[serial]\nports = ["{workdir / base}/tty-*"]\nrescan_s = 1.0\n[engine]\nsettle_ms = {args.settle_ms}\n'
            f'[journal]\npath = "{workdir / base}/journal.sqlite3"\n')
        p = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config",
                              str(workdir / base / "bridge.toml")],
                             stdout=(workdir / base / "bridge.log").open("wb"), stderr=subprocess.STDOUT,
                             preexec_fn=raise_fd_limit, env=env)
        procs.append(p)
        meter.watch(f"bridge {base}", p.pid)
    kills = [k for k in args.kills.split(",") if k] if cluster is not None else []
    seconds = args.seconds or (args.first_kill + len(kills) * (args.down_for + args.between) + 10)
    ctx = mp.get_context("fork")
    out, ready = ctx.Queue(), ctx.Event()
    sim = ctx.Process(target=simulate, args=(masters, boards, seconds, out, ready, 1858))
    sim.start()
    assert sim.pid is not None
    meter.watch("simulator", sim.pid)
    result: dict[str, Any] = {"kind": kind, "seconds": seconds, "windows": []}
    try:
        # every board online as the broadcaster sees it, then a margin for the event streams
        deadline = time.monotonic() + 600
        online = 0
        while online < len(boards):
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {online} of {len(boards)} boards came online")
            time.sleep(2.0)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/api/state?svg=0", timeout=20) as r:
                    online = sum(1 for b in json.load(r)["boards"] if b.get("online"))
            except OSError:
                online = 0
        time.sleep(5.0)
        for key in meter.start:        # CPU from the start of play
            meter.start[key] = cpu_seconds(key[1])
        seen_out, observer_stop = ctx.Queue(), ctx.Event()
        observer = ctx.Process(target=observe, args=(http_port, args.viewers, observer_stop, seen_out))
        observer.start()
        assert observer.pid is not None
        meter.watch("measuring (PGN poller, consoles)", observer.pid)
        ready.set()
        start = time.monotonic()
        asyncio.run(fault_and_sample(args, seconds, kills, start, cluster, bases[0], meter, result))
        observer_stop.set()
        seen, console, final = seen_out.get(timeout=120)
        observer.join(10)
        result["final_plies"] = final
        places: dict[str, float] = out.get(timeout=seconds + 120)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        sim.join(10)
        if mosquitto is not None:
            mosquitto.terminate()
            mosquitto.wait(5)
        if cluster is not None:
            cluster.stop()
        for fd in masters:
            os.close(fd)
    windows: list[dict[str, Any]] = result["windows"]
    lat: list[float] = []
    console_lat: list[float] = []
    lost = 0
    placed_plies: dict[int, int] = {}
    for key, placed in places.items():
        board, ply_text = key.rsplit("/", 1)
        ply = int(ply_text)
        placed_plies[number[board]] = max(ply, placed_plies.get(number[board], 0))
        for viewer in console:
            got_console = viewer.get((number[board], ply))
            if got_console is not None:
                console_lat.append((got_console - placed) * 1000)
        got = seen.get((number[board], ply))
        if got is None:
            lost += 1
            continue
        window = next((w for w in windows if w["killed"] <= placed <= w["back"]), None)
        (window["lat"] if window is not None else lat).append((got - placed) * 1000)
    log_text = (workdir / "broadcast.log").read_text(errors="replace")
    bridge_logs = "".join((workdir / base / "bridge.log").read_text(errors="replace") for base in bases)
    result["log_counts"] = {
        "gaps given up (broadcaster)": log_text.count("did not come within"),
        "plies taken from a PGN (broadcaster)": log_text.count("plies made while away"),
        "events' primary lost (bridges)": bridge_logs.count("sent again on"),
    }
    final = result.pop("final_plies", {})
    duplicated = sum(max(0, plies - placed_plies.get(board, 0)) for board, plies in final.items())
    elapsed = result.pop("elapsed")
    cpu = {name: 100 * s / elapsed for name, s in result.pop("cpu_play").items()}
    # what each process costs per move, the late ones' work included: independent of how starved it was
    result["ms_per_move"] = {name: 1000 * s / max(1, len(places)) for name, s in result.pop("cpu_all").items()}
    result["moves_per_s"] = len(places) / seconds
    result.update(moves=len(places), lost=lost, duplicated=duplicated, lat=lat, console=console_lat, cpu=cpu,
                  viewers_seen=[len(v) for v in console])
    return result


def observe(http_port: int, viewers: int, stop: Any, out: Any) -> None:
    """In a process of its own (the measuring must not starve the kills' timing): poll the round PGN and read
    ``viewers`` consoles' event streams until ``stop`` is set; put (PGN first seen, each console's first seen,
    the final plies per board) in ``out``."""
    seen: dict[tuple[int, int], float] = {}
    console: list[dict[tuple[int, int], float]] = [{} for _ in range(viewers)]
    final: dict[int, int] = {}

    async def poll() -> None:
        counter = PlyCounter()
        last = ""
        async with aiohttp.ClientSession() as http:
            while not stop.is_set():
                try:
                    async with http.get(f"http://127.0.0.1:{http_port}/round/1.pgn") as resp:
                        text = await resp.text()
                except aiohttp.ClientError:
                    await asyncio.sleep(0.2)
                    continue
                now = time.monotonic()
                if text != last:
                    last = text
                    for board, plies in counter.update(text).items():
                        for ply in range(final.get(board, 0) + 1, plies + 1):
                            seen.setdefault((board, ply), now)
                        final[board] = plies
                await asyncio.sleep(0.1)

    async def view(mine: dict[tuple[int, int], float]) -> None:
        """One console: the event stream without pictures; the time each (board, ply) first shows."""
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        while not stop.is_set():
            try:
                async with aiohttp.ClientSession(timeout=timeout) as http, \
                        http.get(f"http://127.0.0.1:{http_port}/api/stream?svg=0") as resp:
                    kind = ""
                    async for raw in resp.content:
                        if raw.startswith(b"event: "):
                            kind = raw[7:].decode().strip()
                        elif raw.startswith(b"data: ") and kind == "board":
                            board, ply = BOARD_PLY.search(raw).groups()  # type: ignore[union-attr]
                            if int(ply) > 0:
                                mine.setdefault((int(board), int(ply)), time.monotonic())
            except (aiohttp.ClientError, ValueError, AttributeError):
                await asyncio.sleep(0.5)

    async def main() -> None:
        tasks = [asyncio.create_task(poll()), *(asyncio.create_task(view(mine)) for mine in console)]
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
    out.put((seen, console, final))


async def fault_and_sample(args: argparse.Namespace, seconds: float, kills: list[str], start: float,
                           cluster: NatsCluster | None, victim_base: str, meter: CpuMeter,
                           result: dict[str, Any]) -> None:
    stop = asyncio.Event()

    async def victim_of(kind: str) -> int | None:
        assert cluster is not None
        if kind == "stream-leader":       # the node every QoS 1 publish waits for
            return (await asyncio.to_thread(cluster.stream_leaders)).get("$MQTT_msgs")
        if kind == "meta-leader":
            return await asyncio.to_thread(cluster.meta_leader)
        client = "touchmove-broadcast-" if kind == "broadcaster-node" else f"bridge-{victim_base}"
        return await asyncio.to_thread(connected_node, cluster, client)

    async def fault() -> None:
        if cluster is None:
            return
        await asyncio.sleep(args.first_kill)
        for kind in kills:
            victim = await victim_of(kind)
            if victim is None:
                result.setdefault("notes", []).append(f"no node to kill ({kind})")
                continue
            try:
                leaders = await asyncio.to_thread(cluster.stream_leaders)
                led = sorted(name for name, node in leaders.items() if node == victim)
                if await asyncio.to_thread(cluster.meta_leader) == victim:
                    led.append("meta")
            except OSError:
                led = ["?"]
            cluster.kill(victim)
            killed = time.monotonic()
            window: dict[str, Any] = {"kind": kind, "node": victim + 1, "led": ", ".join(led) or "nothing",
                                      "killed": killed, "back": float("inf"), "lat": [], "load": os.getloadavg()[0]}
            result["windows"].append(window)
            await asyncio.sleep(args.down_for)
            try:
                await asyncio.to_thread(cluster.restart, victim, 300.0)
            except RuntimeError as exc:
                result.setdefault("notes", []).append(f"restart of n{victim + 1}: {exc}")
                window["back"] = time.monotonic()
                return
            window["back"] = time.monotonic()
            pid = cluster.nodes[victim].pid
            if pid:
                meter.watch(f"nats-server n{victim + 1}", pid)
            await asyncio.sleep(args.between)

    async def sampler() -> None:
        loads = result.setdefault("loads", [])
        while not stop.is_set():
            meter.sample()
            loads.append(os.getloadavg()[0])
            await asyncio.sleep(0.5)

    tasks = [asyncio.create_task(fault()), asyncio.create_task(sampler())]
    await asyncio.sleep(seconds + 4)
    result["elapsed"] = time.monotonic() - start
    meter.sample()
    result["cpu_play"] = meter.per_name()
    await asyncio.sleep(args.drain)     # what is late still arrives (or is lost)
    while not tasks[0].done() and time.monotonic() - start < seconds + 300:
        await asyncio.sleep(1.0)        # a killed node is still coming back: wait for it (and the moves)
    meter.sample()
    result["cpu_all"] = meter.per_name()   # the whole work of the run, what was late included
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)



def fmt(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.0f} / {pct(values, 99):.0f} / {max(values):.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=int, default=2000)
    parser.add_argument("--bridges", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=0.0,
                        help="seconds of play (default: long enough for every kill)")
    parser.add_argument("--settle-ms", type=int, default=200)
    parser.add_argument("--first-kill", type=float, default=20.0, help="seconds of play before the first kill")
    parser.add_argument("--down-for", type=float, default=10.0, help="seconds a cluster node stays down")
    parser.add_argument("--between", type=float, default=15.0, help="seconds after a node is back before the next kill")
    parser.add_argument("--drain", type=float, default=30.0, help="seconds to wait for late moves")
    parser.add_argument("--broker", choices=["both", "nats", "mosquitto"], default="nats")
    parser.add_argument("--kills", default=",".join(KILL_KINDS),
                        help=f"the nodes killed in turn, comma-separated, of: {', '.join(KILL_KINDS)}")
    parser.add_argument("--events-qos", type=int, choices=[0, 1], default=0,
                        help="the bridges' events_qos on NATS (0: own connections, the broadcaster's standby)")
    parser.add_argument("--viewers", type=int, default=10, help="consoles reading the event stream")
    parser.add_argument("--workdir", type=Path, help="keep the configurations and logs here (a new folder)")
    args = parser.parse_args()
    if any(k not in KILL_KINDS for k in args.kills.split(",") if k):
        parser.error(f"--kills: each one of {', '.join(KILL_KINDS)}")
    fig = Run("cluster_latency" if args.broker == "nats" else f"cluster_latency_{args.broker}")
    fig.note(f"{args.boards} boards on {args.bridges} bridges, {args.viewers} consoles, events QoS {args.events_qos} "
             f"on NATS; latency: last place written → a round PGN with that ply ({args.settle_ms} ms settle included)")
    load = os.getloadavg()
    print(f"{args.boards} boards on {args.bridges} bridges, {args.viewers} console viewers, events QoS "
          f"{args.events_qos} on NATS; load average before {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on "
          f"{os.cpu_count()} cores", flush=True)
    kinds = ["nats", "mosquitto"] if args.broker == "both" else [args.broker]
    for kind in kinds:
        if args.workdir is not None:
            (args.workdir / kind).mkdir(parents=True)
            r = run_one(kind, args, args.workdir / kind)
        else:
            with tempfile.TemporaryDirectory(prefix=f"touchmove-cluster-bench-{kind}-") as tmp:
                r = run_one(kind, args, Path(tmp))
        label = "3-node NATS cluster" if kind == "nats" else "one Mosquitto"
        print(f"\n{label}, {r['seconds']:.0f} s of play: {r['moves']} moves placed, {r['lost']} not in the round PGN "
              f"after {args.drain:.0f} s, {r['duplicated']} plies more than placed", flush=True)
        print(f"  place -> round PGN p50 / p99 / max: {fmt(r['lat'])}" + (
            " (moves placed while every node served)" if r["windows"] else ""), flush=True)
        for w in r["windows"]:
            down = w["back"] - w["killed"]
            print(f"  killed {w['kind']} (n{w['node']}, led {w['led']}), down {down:.1f} s, load {w['load']:.1f}: "
                  f"{len(w['lat'])} moves placed meanwhile, p50 / p99 / max {fmt(w['lat'])}", flush=True)
        print(f"  place -> console stream ({args.viewers} viewers, every move each) p50 / p99 / max: "
              f"{fmt(r['console'])}; (board, ply) seen per viewer: {r['viewers_seen']}", flush=True)
        print("  " + ", ".join(f"{k}: {v}" for k, v in r["log_counts"].items()), flush=True)
        for note in r.get("notes", []):
            print(f"  note: {note}")
        loads = r.get("loads") or [float("nan")]
        print(f"  load average (1 min) during the run: median {statistics.median(loads):.1f}, max {max(loads):.1f}")
        print("  CPU (% of one core): " + ", ".join(f"{k} {v:.0f}%" for k, v in sorted(r["cpu"].items())),
              flush=True)
        rate = r["moves_per_s"] * 2000 / args.boards
        print(f"  CPU ms per move placed (whole run, the late moves' work included), and the cores each would need "
              f"at 2,000 boards' pace ({rate:.0f} moves/s): " + ", ".join(
                  f"{k} {v:.2f} ms = {v * rate / 1000:.2f}" for k, v in sorted(r["ms_per_move"].items())), flush=True)
        add_latencies(fig, label, r["lat"], boards=args.boards, moves=r["moves"], lost=r["lost"],
                      duplicated=r["duplicated"])
        for w in r["windows"]:
            add_latencies(fig, f"{label}, placed while {w['kind']} (n{w['node']}, led {w['led']}) was down "
                          f"{w['back'] - w['killed']:.1f} s", w["lat"])
        add_latencies(fig, f"{label}, place → console stream ({args.viewers} viewers)", r["console"])
        for name, ms in sorted(r["ms_per_move"].items()):
            fig.add("CPU a move placed", round(ms, 2), "ms", group=f"{label}: {name}")
    load = os.getloadavg()
    print(f"\nload average after {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    fig.write()


def add_latencies(fig: Run, row: str, values: list[float], **counts: int) -> None:
    """Add a row's counts and its p50 / p99 / max (nothing measured: the counts alone)."""
    if "boards" in counts:
        fig.add("boards", counts.pop("boards"), group=row)
    fig.add("moves", counts.pop("moves", len(values)), group=row)
    for name, value in counts.items():
        fig.add(name, value, group=row)
    if values:
        fig.add("p50", round(statistics.median(values)), "ms", group=row)
        fig.add("p99", round(pct(values, 99)), "ms", group=row)
        fig.add("max", round(max(values)), "ms", group=row)


if __name__ == "__main__":
    main()
