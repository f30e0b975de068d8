"""Cluster benchmark (a script, not a test): many boards across several bridges, one broker or a 3-node
NATS cluster, into one broadcaster; latency from a piece placed to the move in the round PGN.

    .venv/bin/python bench/cluster_latency.py [--boards 1000] [--bridges 5] [--seconds 60] [--broker both]

Per broker kind: the broker (three ``nats-server`` nodes with MQTT and JetStream, or one Mosquitto), the
bridges as their own processes (``touchmove run``, one pseudo-terminal per board, each bridge on a different
node), the broadcaster as its own process (``touchmove broadcast``, on the third node), a simulator process
playing every board at blitz pace (``bridge_latency.py``'s: a move every 3-7 s, pieces held 0.2-0.6 s,
heartbeats) and a poller fetching ``/round/1.pgn`` back to back. Latency = from the simulator writing a
move's last ``place`` to the poller reading a round PGN with that ply; it includes the engine's settle
time. With the cluster, the node the first bridge is connected to (``--kill stream-leader``: the node leading
the QoS 1 stream) is killed (SIGKILL) a third of the way in and restarted ``--down-for`` seconds later: moves
placed from the kill until the node is back are reported apart (delay), and every placed move must reach the
PGN (loss). CPU per process in % of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
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


def tournament_toml(boards: list[str], bases: list[str], urls: list[str], out: Path, qos: int) -> str:
    lines = ['event = "Cluster bench"', "round = 1", "", "[broadcast]", f'output_dir = "{out}"', 'token = "bench"',
             "", "[[brokers]]", f"urls = {json.dumps(urls)}", f"bases = {json.dumps(bases)}",
             f"subscribe_qos = {qos}", "",
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
    per = args.boards // args.bridges
    bases = [f"hall-{chr(97 + b)}" for b in range(args.bridges)]
    boards = [f"{bases[b]}-{i:03d}" for b in range(args.bridges) for i in range(per)]
    number = {board: n for n, board in enumerate(boards, start=1)}
    broadcaster_node = 2 % len(urls)
    (workdir / "t.toml").write_text(tournament_toml(boards, bases, rotated(urls, broadcaster_node), workdir / "out",
                                                    0 if kind == "nats" else 1))
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
            f'client_id = "bridge-{base}"\nkeepalive = 5\nqueue_size = 100000\n[serial]\n'
            f'ports = ["{workdir / base}/tty-*"]\nrescan_s = 1.0\n[engine]\nsettle_ms = {args.settle_ms}\n'
            f'[journal]\npath = "{workdir / base}/journal.sqlite3"\n')
        p = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config",
                              str(workdir / base / "bridge.toml")],
                             stdout=(workdir / base / "bridge.log").open("wb"), stderr=subprocess.STDOUT,
                             preexec_fn=raise_fd_limit, env=env)
        procs.append(p)
        meter.watch(f"bridge {base}", p.pid)
    ctx = mp.get_context("fork")
    out, ready = ctx.Queue(), ctx.Event()
    sim = ctx.Process(target=simulate, args=(masters, boards, args.seconds, out, ready, 1858))
    sim.start()
    assert sim.pid is not None
    meter.watch("simulator", sim.pid)
    result: dict[str, Any] = {"kind": kind}
    try:
        # every board online as the broadcaster sees it (its subscriptions are made: on NATS each QoS 1
        # subscription is a replicated JetStream consumer, ~0.4 s each), then a margin for the event streams
        deadline = time.monotonic() + 300
        online = 0
        while online < len(boards):
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {online} of {len(boards)} boards came online")
            time.sleep(1.0)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/api/state?svg=0", timeout=10) as r:
                    online = sum(1 for b in json.load(r)["boards"] if b.get("online"))
            except OSError:
                online = 0
        time.sleep(5.0)
        for key in meter.start:        # CPU from the start of play
            meter.start[key] = cpu_seconds(key[1])
        ready.set()
        start = time.monotonic()
        seen = asyncio.run(poll_and_fault(args, http_port, start, cluster, bases[0], meter, result))
        places: dict[str, float] = out.get(timeout=args.seconds + 120)
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
    lat, down_lat, lost = [], [], 0
    window = result.get("window")
    for key, placed in places.items():
        board, ply = key.rsplit("/", 1)
        got = seen.get((number[board], int(ply)))
        if got is None:
            lost += 1
            continue
        in_window = window is not None and window[0] <= placed <= window[1]
        (down_lat if in_window else lat).append((got - placed) * 1000)
    elapsed = result.pop("elapsed")
    cpu = {name: 100 * s / elapsed for name, s in meter.per_name().items()}
    result.update(moves=len(places), lost=lost, lat=lat, down=down_lat, cpu=cpu)
    return result


async def poll_and_fault(args: argparse.Namespace, http_port: int, start: float, cluster: NatsCluster | None,
                         victim_base: str, meter: CpuMeter, result: dict[str, Any]) -> dict[tuple[int, int], float]:
    seen: dict[tuple[int, int], float] = {}
    stop = asyncio.Event()

    async def poll() -> None:
        counter = PlyCounter()
        known: dict[int, int] = {}
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
                        for ply in range(known.get(board, 0) + 1, plies + 1):
                            seen.setdefault((board, ply), now)
                        known[board] = plies
                await asyncio.sleep(0.02)

    async def fault() -> None:
        if cluster is None:
            return
        await asyncio.sleep(args.seconds / 3)
        if args.kill == "stream-leader":       # the node every QoS 1 publish waits for
            victim = (await asyncio.to_thread(cluster.stream_leaders)).get("$MQTT_msgs")
        else:
            victim = await asyncio.to_thread(connected_node, cluster, f"bridge-{victim_base}")
        if victim is None:
            result["note"] = f"no node to kill ({args.kill})"
            return
        try:
            led = sorted(name for name, node in (await asyncio.to_thread(cluster.stream_leaders)).items()
                         if node == victim)
        except OSError:
            led = ["?"]
        result["victim_led"] = ", ".join(led) or "no MQTT stream"
        cluster.kill(victim)
        killed = time.monotonic()
        result["window"] = (killed, float("inf"))      # until the node serves MQTT again
        result["node_down_s"] = float("nan")
        result["note"] = f"killed n{victim + 1} at {killed - start:.0f} s; it was not back before the end"
        await asyncio.sleep(args.down_for)
        try:
            await asyncio.to_thread(cluster.restart, victim, 300.0)
        except RuntimeError as exc:
            result["note"] = f"restart of n{victim + 1}: {exc}"
            return
        back = time.monotonic()
        pid = cluster.nodes[victim].pid
        if pid:
            meter.watch(f"nats-server n{victim + 1}", pid)
        result["window"] = (killed, back)
        result["node_down_s"] = back - killed
        result.pop("note", None)

    async def sampler() -> None:
        loads = result.setdefault("loads", [])
        while not stop.is_set():
            meter.sample()
            loads.append(os.getloadavg()[0])
            await asyncio.sleep(0.5)

    tasks = [asyncio.create_task(poll()), asyncio.create_task(fault()), asyncio.create_task(sampler())]
    await asyncio.sleep(args.seconds + 4)
    result["elapsed"] = time.monotonic() - start
    meter.sample()
    await asyncio.sleep(args.drain)     # what is late still arrives (or is lost)
    while result.get("window", (0, 0))[1] == float("inf") and time.monotonic() - start < args.seconds + 300:
        await asyncio.sleep(1.0)        # the killed node is still coming back: wait for it (and the moves)
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return seen


def fmt(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.0f} / {pct(values, 99):.0f} / {max(values):.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=int, default=1000)
    parser.add_argument("--bridges", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=60.0, help="seconds of play (default 60)")
    parser.add_argument("--settle-ms", type=int, default=200)
    parser.add_argument("--down-for", type=float, default=10.0, help="seconds a cluster node stays down")
    parser.add_argument("--drain", type=float, default=30.0, help="seconds to wait for late moves")
    parser.add_argument("--broker", choices=["both", "nats", "mosquitto"], default="both")
    parser.add_argument("--kill", choices=["bridge-node", "stream-leader"], default="bridge-node",
                        help="the node killed: the first bridge's, or the leader of the QoS 1 stream ($MQTT_msgs)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"{args.boards} boards on {args.bridges} bridges, {args.seconds:.0f} s of play; load average before "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores", flush=True)
    kinds = ["nats", "mosquitto"] if args.broker == "both" else [args.broker]
    for kind in kinds:
        with tempfile.TemporaryDirectory(prefix=f"touchmove-cluster-bench-{kind}-") as tmp:
            r = run_one(kind, args, Path(tmp))
        label = "3-node NATS cluster" if kind == "nats" else "one Mosquitto"
        print(f"\n{label}: {r['moves']} moves placed, {r['lost']} not in the round PGN after {args.drain:.0f} s",
              flush=True)
        print(f"  place -> round PGN p50 / p99 / max: {fmt(r['lat'])}" + (
            " (outside the node-down window)" if r.get("window") else ""), flush=True)
        if r.get("window"):
            print(f"  node down {r['node_down_s']:.1f} s: moves placed meanwhile ({len(r['down'])}) "
                  f"p50 / p99 / max: {fmt(r['down'])}", flush=True)
        if r.get("victim_led"):
            print(f"  the killed node led: {r['victim_led']}", flush=True)
        if r.get("note"):
            print(f"  note: {r['note']}")
        loads = r.get("loads") or [float("nan")]
        print(f"  load average (1 min) during the run: median {statistics.median(loads):.1f}, max {max(loads):.1f}")
        print("  CPU (% of one core): " + ", ".join(f"{k} {v:.0f}%" for k, v in sorted(r["cpu"].items())),
              flush=True)
    load = os.getloadavg()
    print(f"\nload average after {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")


if __name__ == "__main__":
    main()
