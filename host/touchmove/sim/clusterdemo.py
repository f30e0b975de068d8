"""``touchmove cluster-demo``: three halls on a 3-node NATS cluster, one node killed mid-round.

A private NATS cluster (three ``nats-server`` processes on free loopback ports, private JetStream
directories, MQTT on every node), three ``touchmove run`` bridges (one per hall, each with simulated boards:
the real firmware under MicroPython with its sim driver playing a game with human-like hands) connected to
different nodes, and one broadcaster on the third node. Mid-round the node the first hall's bridge is
connected to is killed by its PID (SIGKILL) and started again some seconds later. At the end every game of
the round PGN is compared with what the hands played. The last line is::

    plies played N, in the round PGN N, plies lost: 0, duplicates: 0, node down for S s
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import io
import json
import logging
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import aiomqtt
import chess
import chess.pgn

from touchmove import records
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.mqtt import wire
from touchmove.sim import hands
from touchmove.sim.demo import firmware_command, write_timeline
from touchmove.sim.natscluster import NatsCluster, nats_binary
from touchmove.sim.ptyboard import PtyBoard

log = logging.getLogger(__name__)

MIN_GAP_MS = 300
HALLS = ("hall-a", "hall-b", "hall-c", "hall-d", "hall-e")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--boards", type=int, default=2, help="simulated boards per hall (default 2)")
    parser.add_argument("--plies", type=int, default=40, help="plies per game, at most (default 40)")
    parser.add_argument("--speed", type=int, default=4, help="boards' time runs N times faster (default 4)")
    parser.add_argument("--kill-after", type=float, default=8.0,
                        help="seconds after the boards start when a node is killed (default 8)")
    parser.add_argument("--down", type=float, default=6.0, help="seconds before it is restarted (default 6)")
    parser.add_argument("--kill-node-of", choices=["bridge", "broadcaster", "stream-leader", "meta-leader"],
                        default="bridge", help="kill the node of the first hall's bridge (default), of the "
                        "broadcaster, the leader of the QoS 1 stream ($MQTT_msgs) or JetStream's meta leader")
    parser.add_argument("--events-qos", type=int, choices=[0, 1], default=0,
                        help="the bridges' events_qos (default 0: QoS 0 on connections of their own, and the "
                        "broadcaster with an events' standby connection)")
    parser.add_argument("--seed", type=int, default=13, help="random seed of the games")
    parser.add_argument("--workdir", type=Path, help="keep configurations, logs and journals here")
    parser.set_defaults(handler=run)


@dataclass
class Board:
    board_id: str
    number: int
    moves: list[chess.Move]
    result: str            # "*" unless the game ends on the board (mate, stalemate)
    duration: float        # seconds of real time the timeline lasts
    pty: PtyBoard | None = None


@dataclass
class Hall:
    name: str
    node: int
    config: Path
    log: Path
    boards: list[Board] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None


def random_game(rng: random.Random, plies: int) -> list[chess.Move]:
    """A legal game of up to ``plies`` plies; promotions to a queen only (an occupancy board sees no piece)."""
    board = chess.Board()
    moves: list[chess.Move] = []
    while len(moves) < plies and not board.is_game_over(claim_draw=False):
        legal = [m for m in board.legal_moves if m.promotion in (None, chess.QUEEN)]
        captures = [m for m in legal if board.is_capture(m)]
        move = rng.choice(captures if captures and rng.random() < 0.4 else legal)
        board.push(move)
        moves.append(move)
    return moves


def board_timeline(moves: list[chess.Move], seed: int, settle_ms: int) -> list[records.Record]:
    """Plain hands (no slides, bounces or chatter: this demo checks delivery, the engine has its own tests)."""
    style = hands.Style(settle_ms=settle_ms, promote_record=False, overlap=0.0, think_ms=(600, 2500), slide=0.0,
                        bounce=0.0, chatter=0.0, hesitate=0.0, clock=False, release_ms=(3 * settle_ms, 5 * settle_ms))
    player = hands.Hands(random.Random(seed), style, t=1500)
    hands.play(chess.Board(), moves, player)
    # changes at least MIN_GAP_MS apart: a simulated board N times faster on a busy machine must not have its
    # debouncer merge a victim's lift with the capturer's place (tens of real ms apart otherwise)
    out: list[records.Record] = []
    t = 0
    for rec in player.records:
        t = max(rec.t, t + MIN_GAP_MS)
        out.append(dataclasses.replace(rec, t=t))
    return out


def bridge_toml(hall: Hall, urls: list[str], ports_glob: str, journal: Path, settle_ms: int,
                events_qos: int = 1) -> str:
    return (f"[mqtt]\nurls = {json.dumps(urls)}\nbase_topic = \"{hall.name}\"\nclient_id = \"bridge-{hall.name}\"\n"
            f"keepalive = 5\nevents_qos = {events_qos}\n\n[serial]\nports = [\"{ports_glob}\"]\nrescan_s = 0.5\n\n"
            f"[engine]\nsettle_ms = {settle_ms}\n\n[journal]\npath = \"{journal}\"\n")


def rotated(urls: list[str], start: int) -> list[str]:
    return urls[start:] + urls[:start]


def connected_node(cluster: NatsCluster, client_id: str, excluding: str = "standby") -> int | None:
    """The index of the node holding the MQTT connection ``client_id`` (a prefix; from the nodes' /connz), not
    counting connections whose id contains ``excluding`` (the broadcaster's events' standby)."""
    for i, node in enumerate(cluster.nodes):
        if node.pid is None:
            continue
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{node.monitor_port}/connz?limit=4096", timeout=2) as r:
                data = json.load(r)
        except OSError:
            continue
        if any(str(c.get("mqtt_client", "")).startswith(client_id) and excluding not in str(c.get("mqtt_client"))
               for c in data.get("connections") or []):
            return i
    return None


def journal_plies(journal: Path, board_id: str) -> int:
    """How many plies of the board's current game its bridge's journal holds (to tell sensing from delivery)."""
    plies: dict[int, str] = {}
    with contextlib.closing(sqlite3.connect(journal)) as db:
        for (payload,) in db.execute("SELECT payload FROM events WHERE board = ? ORDER BY seq", (board_id,)):
            ev = json.loads(payload)
            if ev.get("type") in ("move", "move_amended"):
                plies[ev["ply"]] = ev["uci"]
            elif ev.get("type") == "takeback":
                plies = {p: u for p, u in plies.items() if p < ev["ply"]}
    return len(plies)


def check_pgn(text: str, boards: list[Board]) -> tuple[int, int, int, list[str]]:
    """Return (plies in the PGN matching the played games, plies lost, extra plies, problems)."""
    games: dict[str, chess.pgn.Game] = {}
    stream = io.StringIO(text)
    while (game := chess.pgn.read_game(stream)) is not None:
        games[game.headers.get("Round", "?")] = game
    matched = lost = extra = 0
    problems: list[str] = []
    for b in boards:
        game = games.get(f"1.{b.number}")
        got = [] if game is None else list(game.mainline_moves())
        common = 0
        while common < min(len(got), len(b.moves)) and got[common] == b.moves[common]:
            common += 1
        matched += common
        lost += len(b.moves) - common
        extra += len(got) - common
        if got != b.moves:
            problems.append(f"board {b.number} ({b.board_id}): {len(got)} plies in the PGN, {len(b.moves)} played, "
                            f"first difference at ply {common + 1}")
        elif game is not None and game.headers.get("Result") != b.result:
            problems.append(f"board {b.number}: result {game.headers.get('Result')} in the PGN, "
                            f"{b.result} on the board")
    return matched, lost, extra, problems


async def count_duplicates(url: str, bases: list[str], seen: dict[tuple[str, int], int], stop: asyncio.Event) -> None:
    """Count the events delivered more than once (same board and seq) to a plain subscriber."""
    host, port = url.removeprefix("mqtt://").split(":")
    while not stop.is_set():
        try:
            async with aiomqtt.Client(host, int(port), identifier=f"dup-counter-{os.getpid()}") as client:
                for base in bases:
                    await client.subscribe(wire.board_topic(base, wire.ANY, "events"), qos=1)
                async for message in client.messages:
                    with contextlib.suppress(ValueError, TypeError, KeyError):
                        ev = json.loads(bytes(message.payload))
                        key = (str(ev["board"]), int(ev["seq"]))
                        seen[key] = seen.get(key, 0) + 1
        except aiomqtt.MqttError:
            await asyncio.sleep(0.5)


async def cluster_round(args: argparse.Namespace, workdir: Path, cluster: NatsCluster) -> int:
    settle = 200
    rng = random.Random(args.seed)
    urls = cluster.mqtt_urls
    halls: list[Hall] = []
    pairings = []
    number = 0
    env_base = dict(os.environ, TOUCHMOVE_SIM_SPEED=str(args.speed), TOUCHMOVE_SIM_EXIT="0")
    for h in range(3):
        name = HALLS[h]
        hall_dir = workdir / name
        hall_dir.mkdir(parents=True, exist_ok=True)
        hall = Hall(name, h % len(urls), hall_dir / "bridge.toml", hall_dir / "bridge.log")
        hall.config.write_text(bridge_toml(hall, rotated(urls, hall.node), str(hall_dir / "board*"),
                                           hall_dir / "journal.sqlite3", settle, args.events_qos), encoding="utf-8")
        for k in range(args.boards):
            number += 1
            moves = random_game(rng, args.plies)
            final = chess.Board()
            for m in moves:
                final.push(m)
            outcome = final.outcome(claim_draw=False)
            recs = board_timeline(moves, rng.randrange(1 << 30), settle)
            path = hall_dir / f"timeline-{k + 1}.jsonl"
            write_timeline(path, recs)
            last_t = max((r.t for r in recs), default=0)
            board = Board(f"{name}-{k + 1:02d}", number, moves, outcome.result() if outcome else "*",
                          last_t / 1000 / max(1, args.speed))
            board.pty = PtyBoard(firmware_command(), str(hall_dir / f"board{k + 1}"),
                                 env=dict(env_base, TOUCHMOVE_SIM=str(path), TOUCHMOVE_BOARD=board.board_id))
            hall.boards.append(board)
            pairings.append({"board": number, "board_id": board.board_id,
                             "white": f"White {number}", "black": f"Black {number}"})
        halls.append(hall)
    boards = [b for hall in halls for b in hall.boards]
    broadcaster_node = 2 % len(urls)
    bases = [hall.name for hall in halls]
    tournament = parse_tournament({
        "event": "touchmove cluster demo", "site": "Loopback", "round": 1,
        "broadcast": {"output_dir": str(workdir / "broadcast"), "token": "demo"},
        "brokers": [{"urls": rotated(urls, broadcaster_node), "bases": bases, "subscribe_qos": 0,
                     "events_standby": args.events_qos == 0}],
        "rounds": [{"number": 1, "boards": pairings}],
    })
    print(f"NATS cluster: {', '.join(urls)} (nodes n1-n3, data in {cluster.workdir})", flush=True)
    for hall in halls:
        hall.proc = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config", str(hall.config)],
                                     stdout=hall.log.open("ab"), stderr=subprocess.STDOUT)
        print(f"bridge {hall.name}: {len(hall.boards)} boards, first node n{hall.node + 1}", flush=True)
    seen: dict[tuple[str, int], int] = {}
    stop = asyncio.Event()
    counter = asyncio.create_task(count_duplicates(urls[broadcaster_node], bases, seen, stop))
    down_for = 0.0
    svc = BroadcastService(tournament, port=0, svg_workers=0)
    try:
        # a QoS 1 subscription on NATS is a replicated JetStream consumer: about 0.4 s each, 21 of them here
        await svc.start(wait_mqtt=120)
        if True:
            print(f"broadcaster on n{broadcaster_node + 1}: {svc.pgn_url}", flush=True)
            deadline = time.monotonic() + 60
            while any(svc.hub.ingest.bridges.get(b) != "online" for b in bases):
                if time.monotonic() > deadline:
                    raise RuntimeError("the bridges did not come online: see " + ", ".join(str(h.log) for h in halls))
                await asyncio.sleep(0.1)
            for b in boards:
                assert b.pty is not None
                b.pty.plug()
                b.pty.start()
            started = time.monotonic()
            await asyncio.sleep(args.kill_after)
            client, whose = ((f"bridge-{halls[0].name}", f"bridge {halls[0].name}")
                             if args.kill_node_of != "broadcaster" else ("touchmove-broadcast-", "the broadcaster"))
            if args.kill_node_of == "stream-leader":
                victim = (await asyncio.to_thread(cluster.stream_leaders)).get("$MQTT_msgs")
                whose = "the QoS 1 stream's leader"
            elif args.kill_node_of == "meta-leader":
                victim = await asyncio.to_thread(cluster.meta_leader)
                whose = "JetStream's meta leader"
            else:
                victim = await asyncio.to_thread(connected_node, cluster, client)
            if victim is None:
                raise RuntimeError(f"{whose} is connected to no node")
            pid = cluster.kill(victim)
            killed_at = time.monotonic()
            print(f"{killed_at - started:.1f} s: killed node n{victim + 1} (PID {pid}), the node of {whose}",
                  flush=True)
            await asyncio.sleep(args.down)
            await asyncio.to_thread(cluster.restart, victim)
            down_for = time.monotonic() - killed_at
            now_on = None
            for _ in range(30):
                now_on = await asyncio.to_thread(connected_node, cluster, client)
                if now_on is not None:
                    break
                await asyncio.sleep(0.5)
            print(f"{time.monotonic() - started:.1f} s: node n{victim + 1} back after {down_for:.1f} s; {whose} "
                  "now on " + (f"n{now_on + 1}" if now_on is not None else "no node"), flush=True)
            end_of_play = started + max(b.duration for b in boards) + 2
            await asyncio.sleep(max(0.0, end_of_play - time.monotonic()))
            deadline = time.monotonic() + 60
            problems = ["not checked"]
            while time.monotonic() < deadline:
                if svc.hub.outputs.written_version == svc.hub.storage.version:
                    written = svc.hub.outputs.pgn_path.read_text(encoding="utf-8")
                    matched, lost, extra, problems = check_pgn(written, boards)
                    if not problems:
                        break
                await asyncio.sleep(0.5)
            matched, lost, extra, problems = check_pgn(svc.hub.outputs.pgn_path.read_text(encoding="utf-8"), boards)
            for b in boards:
                view = svc.hub.storage.by_number[b.number]
                log.debug("board %s: resync %s at %s, %s plies, bridge PGN %s chars, seqs %s", b.board_id,
                          view.game.needs_resync, view.game.resync_ply, view.game.ply,
                          len(view.bridge_pgn or ""), view.sessions_seq)
    finally:
        await svc.stop()
        stop.set()
        counter.cancel()
        with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
            await counter
        for hall in halls:
            if hall.proc is not None and hall.proc.poll() is None:
                hall.proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    hall.proc.wait(10)
            for b in hall.boards:
                if b.pty is not None:
                    b.pty.stop()
    played = sum(len(b.moves) for b in boards)
    redelivered = sum(n - 1 for n in seen.values() if n > 1)
    print(f"{len(boards)} games on {len(halls)} bridges; {redelivered} events delivered twice after the "
          f"failover (dropped by seq); round PGN {svc.hub.outputs.pgn_path}", flush=True)
    for problem in problems:
        print(f"  PROBLEM {problem}", flush=True)
    for hall in halls:
        for b in hall.boards:
            if any(p.startswith(f"board {b.number} ") for p in problems):
                n = journal_plies(hall.config.parent / "journal.sqlite3", b.board_id)
                print(f"  board {b.number}: its bridge's journal holds {n} plies "
                      f"({'a delivery problem' if n == len(b.moves) else 'the engine did not see them all'})",
                      flush=True)
    journaled = sum(journal_plies(hall.config.parent / "journal.sqlite3", b.board_id)
                    for hall in halls for b in hall.boards)
    print(f"plies published by the bridges (journaled events) {journaled}", flush=True)
    print(f"plies played {played}, in the round PGN {matched}, plies lost: {lost}, duplicates: {extra}, "
          f"node down for {down_for:.1f} s", flush=True)
    return 1 if problems else 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=os.environ.get("TOUCHMOVE_LOG", "WARNING"), format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mqtt").setLevel(logging.ERROR)
    from touchmove.errors import EXIT_USAGE, CommandError

    for name, value, low, high in (("--boards", args.boards, 1, 50), ("--plies", args.plies, 1, 500),
                                   ("--speed", args.speed, 1, 100)):
        if not low <= value <= high:
            raise CommandError(f"{name} must be between {low} and {high}, not {value}", EXIT_USAGE)
    if not (args.kill_after >= 0 and args.down >= 0):
        raise CommandError("--kill-after and --down must be seconds (0 or more)", EXIT_USAGE)
    if nats_binary() is None:
        raise CommandError("nats-server is not installed (sudo apt-get install nats-server, or make broker-deps)")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="touchmove-cluster-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        with NatsCluster(3, workdir=workdir / "nats") as cluster:
            return asyncio.run(cluster_round(args, workdir, cluster))
    except (RuntimeError, OSError) as exc:
        log.debug("cluster-demo failed", exc_info=True)
        print(f"touchmove cluster-demo: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
