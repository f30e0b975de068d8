"""Shared pieces of the end-to-end tests: brokers, subscribers, daemons, simple timelines."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import chess
import chess.pgn
import paho.mqtt.client as mqtt
import pytest

from touchmove.sim.local_broker import listens

REPO = Path(__file__).resolve().parents[2]
OPERA = REPO / "host" / "touchmove" / "data" / "opera-1858.pgn"


def require_binary(name: str, *candidates: str) -> str:
    """Return the path of a program the test needs; skip (or fail under TOUCHMOVE_REQUIRE_ALL=1) without it."""
    for cand in (shutil.which(name), *candidates):
        if cand and os.access(cand, os.X_OK):
            return cand
    reason = f"{name} is not installed (apt-get install {name} / make install); this test needs the real one"
    if os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    """A private Mosquitto on a free port (never the system one)."""

    def __init__(self, tmp: Path) -> None:
        self.binary = require_binary("mosquitto", "/usr/sbin/mosquitto")
        self.port = free_port()
        self.conf = tmp / "mosquitto.conf"
        # ``user``: Mosquitto started as root otherwise runs as ``mosquitto``, which cannot write into the test's
        # directories (a persistence file, a log): a broker told to persist would silently forget every session
        self.conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\nuser {getpass.getuser()}\n"
                             "persistence false\n")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start Mosquitto (again) on the port and wait until it listens there; an error if it cannot."""
        proc = self.proc = subprocess.Popen([self.binary, "-c", str(self.conf)], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if proc.poll() is not None:   # the port taken meanwhile (parallel tests choose free ports too)
                raise RuntimeError(f"mosquitto exited at start (status {proc.returncode}) on port {self.port}")
            if listens(proc.pid, self.port):   # this Mosquitto, not another process's listener on the port
                return
            time.sleep(0.05)
        raise RuntimeError("mosquitto did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"


@dataclass
class Received:
    topic: str
    payload: bytes
    retain: bool
    at: float

    def json(self) -> Any:
        return json.loads(self.payload)


@dataclass
class Subscriber:
    """Collects every message under a base topic (paho in its own thread), reconnecting on its own."""

    port: int
    base: str = "touchmove"
    messages: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"test-sub-{time.time_ns()}",
                                  clean_session=False)
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.client.reconnect_delay_set(0.1, 0.5)
        self.client.connect_async("127.0.0.1", self.port)
        self.client.loop_start()

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, rc: Any, props: Any = None) -> None:
        client.subscribe(f"{self.base}/#", qos=1)

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        with self.lock:
            self.messages.append(Received(msg.topic, bytes(msg.payload), bool(msg.retain), time.monotonic()))

    def events(self, board: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            msgs = list(self.messages)
        return [m.json() for m in msgs if m.topic.endswith("/events")
                and (board is None or m.topic == f"{self.base}/boards/{board}/events")]

    def last(self, topic: str) -> Received | None:
        with self.lock:
            for m in reversed(self.messages):
                if m.topic == topic:
                    return m
        return None

    def wait_for(self, pred: Callable[[], bool], timeout: float, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}")

    def publish(self, topic: str, payload: bytes | str, retain: bool = False) -> None:
        self.client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(5)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def unique_moves(events: list[dict[str, Any]], game: int = 1) -> list[str]:
    """The game's moves from an event stream, deduplicated by seq, with amendments and takebacks applied."""
    seen: set[int] = set()
    plies: dict[int, str] = {}
    for ev in sorted(events, key=lambda e: e["seq"]):
        if ev["seq"] in seen or ev.get("game") != game:
            continue
        seen.add(ev["seq"])
        if ev["type"] in ("move", "move_amended"):
            plies[ev["ply"]] = ev["uci"]
        elif ev["type"] == "takeback":
            plies = {p: u for p, u in plies.items() if p < ev["ply"]}
    return [plies[p] for p in sorted(plies)]


def write_config(path: Path, *, broker_port: int, ports: list[str], journal: Path, settle_ms: int = 200,
                 rescan_s: float = 0.5) -> Path:
    path.write_text(
        f'[mqtt]\nurl = "mqtt://127.0.0.1:{broker_port}"\n\n'
        f"[serial]\nports = {json.dumps(ports)}\nrescan_s = {rescan_s}\n\n"
        f"[engine]\nsettle_ms = {settle_ms}\n\n"
        f'[journal]\npath = "{journal}"\n')
    return path


#: Run argv[1:] (execv: the same process) after asking Linux for SIGKILL when the parent dies (PR_SET_PDEATHSIG,
#: kept across exec). Set in the child itself, not with Popen's preexec_fn, which is unsafe in the test
#: process's threads.
_DIE_WITH_PARENT = ("import ctypes, os, sys\n"
                    "if sys.platform.startswith('linux'):\n"
                    "    ctypes.CDLL(None, use_errno=True).prctl(1, 9)\n"
                    "    if os.getppid() == 1:\n"
                    "        sys.exit(1)\n"
                    "os.execv(sys.argv[1], sys.argv[1:])\n")


def dies_with_parent(argv: list[str]) -> list[str]:
    """Return a command line running ``argv`` as a process that gets SIGKILL when the test process dies. A
    bridge that outlived a killed test run kept rescanning its folder, whose board symlink named a pty number
    the kernel gives to a later test: it took that board's port, which the later test's bridge then found
    "locked by another program" for ever (issue 40)."""
    return [sys.executable, "-c", _DIE_WITH_PARENT, *argv]


def start_daemon(config: Path, log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(dies_with_parent([sys.executable, "-m", "touchmove.cli", "run", "--config", str(config),
                                              "--log-level", "DEBUG"]), stdout=out, stderr=subprocess.STDOUT, cwd=REPO)


def game_moves(pgn_path: Path) -> list[chess.Move]:
    with open(pgn_path) as fh:
        game = chess.pgn.read_game(fh)
    assert game is not None
    return list(game.mainline_moves())


def simple_timeline(moves: list[chess.Move], *, t0: int = 1500, think: int = 700, hand: int = 150,
                    board: chess.Board | None = None) -> list[dict[str, Any]]:
    """Plain human-like lift/place records for a game: victim first on captures, king first when castling."""
    board = board.copy() if board is not None else chess.Board()
    out: list[dict[str, Any]] = []
    t = t0

    def rec(kind: str, sq: chess.Square) -> None:
        nonlocal t
        out.append({"t": t, "type": kind, "sq": chess.square_name(sq)})
        t += hand

    for move in moves:
        t += think
        if board.is_castling(move):
            rank = chess.square_rank(move.from_square)
            kingside = board.is_kingside_castling(move)
            rec("lift", move.from_square)
            rec("place", chess.square(6 if kingside else 2, rank))
            rec("lift", chess.square(7 if kingside else 0, rank))
            rec("place", chess.square(5 if kingside else 3, rank))
        elif board.is_en_passant(move):
            rec("lift", move.from_square)
            rec("place", move.to_square)
            rec("lift", move.to_square + (-8 if board.turn else 8))
        else:
            if board.piece_at(move.to_square) is not None:
                rec("lift", move.to_square)
            rec("lift", move.from_square)
            rec("place", move.to_square)
        board.push(move)
    return out


def write_timeline(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def journal_moves(journal: Path, board: str) -> list[str]:
    """The game's moves (UCI) as the journal's events table has them."""
    import sqlite3

    with sqlite3.connect(journal) as db:
        rows = db.execute("SELECT payload FROM events WHERE board = ? ORDER BY seq", (board,)).fetchall()
    return unique_moves([json.loads(p) for (p,) in rows])


def exported_moves(journal: Path, board: str, out: Path) -> list[str]:
    """The first game's moves (UCI) in the PGN that ``touchmove export`` writes from the journal."""
    pgn = out / f"{board}.pgn"
    subprocess.run([sys.executable, "-m", "touchmove.cli", "export", str(journal), "--board", board, "--pgn",
                    str(pgn), "--recording", str(out / f"{board}.jsonl")], cwd=REPO, check=True,
                   capture_output=True, timeout=120)
    with open(pgn) as fh:
        game = chess.pgn.read_game(fh)
    return [m.uci() for m in game.mainline_moves()] if game is not None else []


class OffersEvents(Protocol):
    """The bridge's MQTT link as a pacer uses it."""

    def offer_event(self, topic: str, payload: bytes, seq: int) -> bool: ...


@dataclass
class EventPacer:
    """Offers numbered events (``{"seq": n}``, n from 1) on one topic every ``every_s`` seconds and notes when each
    was sent, so a test can count what arrived against what was sent."""

    link: OffersEvents
    topic: str
    every_s: float
    sent: dict[int, float] = field(default_factory=dict)
    seq: int = 0

    async def publish_for(self, seconds: float) -> None:
        """Offer events for ``seconds``; each must be taken by the link."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.seq += 1
            self.sent[self.seq] = time.monotonic()
            assert self.link.offer_event(self.topic, json.dumps({"seq": self.seq}).encode(), self.seq)
            await asyncio.sleep(self.every_s)


@dataclass
class CuttingProxy:
    """Forwards to a broker; can hold the broker's answers back (``hold``) and cut every connection."""

    broker_port: int
    hold: bool = False
    held: int = 0
    clients: list[asyncio.StreamWriter] = field(default_factory=list)
    server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        broker_r, broker_w = await asyncio.open_connection("127.0.0.1", self.broker_port)
        self.clients.append(client_w)
        await asyncio.gather(self._pipe(client_r, broker_w, answers=False),
                             self._pipe(broker_r, client_w, answers=True))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, answers: bool) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await reader.read(65536):
                if answers and self.hold:
                    self.held += len(data)
                    continue
                writer.write(data)
                await writer.drain()
        writer.close()

    def cut(self) -> None:
        """Reset every connection to the clients and take no more (a node that died)."""
        assert self.server is not None
        self.server.close()
        for writer in self.clients:
            writer.transport.abort()
