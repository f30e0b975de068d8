"""``touchmove broadcast-demo --boards 20``: a simulated round through a private broker into the broadcaster
(Mosquitto when installed, else a broker embedded in the process).

Simulated bridges play real (random, seeded) games on N boards, with clock times, an alert, a takeback and
a promotion amendment here and there; games end by the board (mate, stalemate, ...), by the kings placed
in the centre, or by the arbiter; on every fourth board the players then set the board up again and start
another game (held for the arbiter: the game played stays in the round). The round PGN is then read back
with python-chess and checked game for game against what was played. ``--serve`` keeps the dashboard up afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import random
import signal
import socket
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import chess
import chess.pgn

from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import BrokerConfig, Tournament, parse_tournament
from touchmove.errors import EXIT_USAGE, CommandError
from touchmove.sim.broadcast_boards import SimBoard, SimBridge
from touchmove.sim.local_broker import LocalBroker

log = logging.getLogger(__name__)

FIRST = ["Anna", "Boris", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivan", "Jana", "Kofi", "Lena",
         "Mateo", "Nadia", "Omar", "Petra", "Quinn", "Rosa", "Sven", "Tara"]
LAST = ["Almeida", "Berg", "Costa", "Dvorak", "Eriksen", "Fischer", "Gupta", "Horvat", "Ivanova", "Jensen",
        "Kowalski", "Lund", "Moreau", "Novak", "Okafor", "Petrov", "Quist", "Rossi", "Silva", "Tanaka"]


#: The round's pace: every board together (a move is a move, a clock event, the state and the PGN).
MOVES_PER_SECOND = 150
#: After play: the check waits while the broadcaster still takes messages in (none for CHECK_QUIET s: done).
CHECK_QUIET = 10.0
CHECK_WAIT_MAX = 900.0
#: The simulated bridge's MQTT client: QoS 1 messages in flight, and how long one may wait for its PUBACK
#: (a thousand boards publishing at once queue up behind the broker).
MAX_INFLIGHT = 200
PUBLISH_TIMEOUT = 120.0
TOP_RATING = 2750
BOTTOM_RATING = 1100
FIRST_FIDE_ID = 1_000_000


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--boards", type=int, default=20, help="boards in the round (default 20)")
    parser.add_argument("--plies", type=int, default=60, help="longest game in plies (default 60)")
    parser.add_argument("--move-time", type=float, default=0.05,
                        help="mean seconds between a board's moves (default 0.05)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the games")
    parser.add_argument("--broker", help="mqtt://host:port of a broker to use (default: a private Mosquitto)")
    parser.add_argument("--out", type=Path, help="output directory (default: a new temporary one)")
    parser.add_argument("--port", type=int, default=0, help="HTTP port of the dashboard (default any free)")
    parser.add_argument("--serve", action="store_true", help="keep the dashboard running until Ctrl-C")
    parser.add_argument("--embedded-broker", action="store_true",
                        help="use a broker inside this process (amqtt) even when Mosquitto is installed")
    parser.set_defaults(handler=run)


def demo_tournament(boards: int, *, broker: BrokerConfig, base: str, out: Path, seed: int) -> Tournament:
    rng = random.Random(seed)
    pairings: list[dict[str, Any]] = []
    # ratings spread from TOP_RATING down to BOTTOM_RATING whatever the size of the field
    step = (TOP_RATING - BOTTOM_RATING) / max(1, 2 * boards)
    for n in range(1, boards + 1):
        def player(rank: int) -> dict[str, Any]:
            name = f"{rng.choice(LAST)}, {rng.choice(FIRST)}"
            title = "GM" if rank < 6 else "IM" if rank < 14 else "FM" if rank < 26 else ""
            # FIDE ids: one per player (two boards never share a player: the tournament file refuses that)
            return {"name": name, "fide_id": FIRST_FIDE_ID + 7 * rank + rng.randrange(0, 7), "title": title,
                    "elo": max(BOTTOM_RATING, round(TOP_RATING - rank * step) - rng.randrange(0, 9))}
        pairings.append({"board": n, "board_id": f"demo-{n:03d}", "white": player(2 * n - 2),
                         "black": player(2 * n - 1)})
    return parse_tournament({
        "event": "touchmove demo open", "site": "Localhost", "time_control": "180+2", "round": 1,
        "broadcast": {"output_dir": str(out), "token": "demo"},
        "brokers": [{"url": f"mqtt://{broker.host}:{broker.port}", "bases": [base]}],
        "rounds": [{"number": 1, "boards": pairings}],
    })


@dataclass
class Played:
    """What a simulated board really played: the truth the PGN is checked against."""

    board: int
    moves: list[str] = field(default_factory=list)
    result: str = "*"
    how: str = ""


async def play_board(sim: SimBoard, number: int, rng: random.Random, plies: int, move_time: float,
                     arbiter: Any) -> Played:
    played = Played(number)
    await sim.start()
    clocks = [180_000, 180_000]
    length = rng.randrange(plies // 2, plies + 1)
    took_back = False
    script = opera_game() if number % 10 == 1 else []  # a classic that ends in mate on the board
    for i in range(len(script) or length):
        if sim.position.is_game_over():
            break
        await asyncio.sleep(rng.uniform(0.3, 1.7) * move_time)
        moves = list(sim.position.legal_moves)
        captures = [m for m in moves if sim.position.is_capture(m) or m.promotion == chess.QUEEN]
        mates = [m for m in moves if _mates(sim.position, m)]
        if script:
            move = script[i]
        elif mates:
            move = mates[0]
        else:
            move = rng.choice(captures if captures and rng.random() < 0.5 else moves)
        side = 0 if sim.position.turn == chess.WHITE else 1
        clocks[side] = max(1000, clocks[side] - rng.randrange(500, 9000) + 2000)
        await sim.move(move.uci(), remaining_ms=clocks[side])
        if move.promotion == chess.QUEEN and rng.random() < 0.5:  # the player put a knight there
            await sim.amend(chess.Move(move.from_square, move.to_square, chess.KNIGHT).uci())
        # a touch-move alert, a takeback of 2 plies (not in a scripted game: its next moves would not follow)
        if number % 7 == 3 and sim.ply == 10 and not took_back and not script:
            took_back = True
            await sim.alert("touch_move", "4.3.1", {"square": chess.square_name(move.to_square)})
            await sim.takeback(sim.ply - 1)
    played.moves = [m.uci() for m in sim.position.move_stack]
    outcome = sim.position.outcome(claim_draw=False)
    if outcome is not None:
        played.result, played.how = outcome.result(), outcome.termination.name.lower()
        await sim.end(played.result, played.how, "5.1.1" if outcome.winner is not None else "5.2")
    elif number % 5 == 0:
        played.result, played.how = rng.choice(["1-0", "0-1", "1/2-1/2"]), "arbiter"
        await arbiter(number, played.result)
    else:
        wanted = rng.choice(["1-0", "0-1", "1/2-1/2"])
        try:
            await sim.kings_to_centre(wanted)
            played.result, played.how = wanted, "kings"
        except ValueError:  # centre squares taken: the arbiter enters it
            played.result, played.how = wanted, "arbiter"
            await arbiter(number, wanted)
    if number % 4 == 2:  # the players clear the board and set it up again: the game played must stay
        await asyncio.sleep(move_time)
        await sim.start()
        for _ in range(2):
            await sim.move(rng.choice(list(sim.position.legal_moves)).uci())
    return played


def opera_game() -> list[chess.Move]:
    """Morphy's Opera Game (Paris, 1858), bundled with the package."""
    path = Path(__file__).resolve().parent.parent / "data" / "opera-1858.pgn"
    with path.open(encoding="utf-8") as fh:
        game = chess.pgn.read_game(fh)
    return list(game.mainline_moves()) if game is not None else []


def _mates(board: chess.Board, move: chess.Move) -> bool:
    board.push(move)
    try:
        return board.is_checkmate()
    finally:
        board.pop()


def check_round_pgn(text: str, played: list[Played]) -> list[str]:
    """Compare the round PGN with the games played; return the differences (empty: all good)."""
    problems: list[str] = []
    stream = io.StringIO(text)
    games: list[chess.pgn.Game] = []
    while (game := chess.pgn.read_game(stream)) is not None:
        games.append(game)
    if len(games) != len(played):
        problems.append(f"{len(games)} games in the PGN, {len(played)} played")
    for game, truth in zip(games, played, strict=False):
        where = f"board {truth.board}"
        if game.errors:
            problems.append(f"{where}: PGN errors {game.errors}")
        if game.headers.get("Round") != f"1.{truth.board}":
            problems.append(f"{where}: Round header {game.headers.get('Round')!r}")
        moves = [m.uci() for m in game.mainline_moves()]
        if moves != truth.moves:
            problems.append(f"{where}: {len(moves)} plies in the PGN, {len(truth.moves)} played")
        if game.headers.get("Result") != truth.result:
            problems.append(f"{where}: result {game.headers.get('Result')} in the PGN, {truth.result} played")
    return problems


#: The signals that end the demo cleanly (the broadcaster, the clients and a private Mosquitto stopped).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def set_aside_earlier_run(out: Path) -> Path | None:
    """Move an earlier run's outputs in ``out`` (its round state: a new run would take its games back) into
    ``out/earlier-run-<k>``; return that folder (None when ``out`` holds no earlier run)."""
    if not out.is_dir() or not any((out / name).exists() for name in ("round-1-state.json", "round-1.pgn",
                                                                      "current-round.json")):
        return None
    k = 1
    while (out / f"earlier-run-{k}").exists():
        k += 1
    target = out / f"earlier-run-{k}"
    target.mkdir()
    for entry in sorted(out.iterdir()):
        if entry != target and not entry.name.startswith("earlier-run-"):
            entry.rename(target / entry.name)
    return target


async def demo(args: argparse.Namespace, broker: BrokerConfig, out: Path) -> int:
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    for sig in STOP_SIGNALS:  # a service manager's stop, a closed terminal: a clean end (no Mosquitto left)
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, lambda: task.cancel() if task is not None else None)
    base = f"touchmove-demo-{uuid.uuid4().hex[:6]}"
    tournament = demo_tournament(args.boards, broker=broker, base=base, out=out, seed=args.seed)
    async with BroadcastService(tournament, port=args.port, token="demo") as svc, \
            aiomqtt.Client(broker.host, broker.port, max_queued_outgoing_messages=100_000,
                           max_inflight_messages=MAX_INFLIGHT, timeout=PUBLISH_TIMEOUT) as client:
        print(f"dashboard {svc.url}/  (arbiter token: demo)", flush=True)
        print(f"round PGN {svc.pgn_url}\nfile      {svc.hub.outputs.pgn_path}", flush=True)
        bridge = SimBridge(client, base)
        for n in range(1, args.boards + 1):
            bridge.board(f"demo-{n:03d}")
        await bridge.online()

        async def arbiter(number: int, result: str) -> None:
            svc.hub.actions.record_result(number, result)

        start = time.monotonic()
        rng = random.Random(args.seed)
        # a big round plays at most MOVES_PER_SECOND moves a second in all (each is four bridge messages)
        move_time = max(args.move_time, args.boards / MOVES_PER_SECOND)
        if move_time > args.move_time:
            print(f"{args.boards} boards: a move every {move_time:.1f} s on each board "
                  f"(at most {MOVES_PER_SECOND} moves a second in all)", flush=True)
        played = await asyncio.gather(*(
            play_board(bridge.board(f"demo-{n:03d}"), n, random.Random(rng.random()), args.plies,
                       move_time, arbiter)
            for n in range(1, args.boards + 1)))
        elapsed = time.monotonic() - start
        plies = sum(len(p.moves) for p in played)
        # wait for the last messages to come through and the file to be written: as long as the broadcaster
        # still takes messages in (a big round on a busy machine has a backlog), up to CHECK_WAIT_MAX
        problems = ["not checked"]
        checked, seen, progress = -1, svc.hub.storage.version, time.monotonic()
        while time.monotonic() - progress < CHECK_QUIET and time.monotonic() - start - elapsed < CHECK_WAIT_MAX:
            await asyncio.sleep(0.2)
            if svc.hub.storage.version != seen:
                seen, progress = svc.hub.storage.version, time.monotonic()
            if svc.hub.outputs.written_version != svc.hub.storage.version or checked == svc.hub.storage.version:
                continue
            checked = svc.hub.storage.version
            problems = check_round_pgn(svc.hub.outputs.pgn_path.read_text(encoding="utf-8"), played)
            if not problems:
                break
        async with aiohttp.ClientSession() as http, http.get(svc.pgn_url) as resp:
            served = await resp.text()
        if served != svc.hub.outputs.pgn_path.read_text(encoding="utf-8"):
            problems.append("the PGN served over HTTP differs from the file")
        hows: dict[str, int] = {}
        for p in played:
            hows[p.how] = hows.get(p.how, 0) + 1
        print(f"{args.boards} boards, {plies} plies played in {elapsed:.1f} s; results by "
              + ", ".join(f"{k} {v}" for k, v in sorted(hows.items())), flush=True)
        if problems:
            print("round PGN check FAILED:\n  " + "\n  ".join(problems), flush=True)
        else:
            print(f"round PGN check ok: {len(played)} games read back with python-chess, every move and "
                  f"result as played -> {svc.hub.outputs.pgn_path}", flush=True)
        if args.serve:
            print("serving the dashboard; Ctrl-C to stop", flush=True)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
        await bridge.clear_retained()
        return 1 if problems else 0


def check_options(args: argparse.Namespace) -> None:
    """Raise a usage error (exit 2) for an option out of range, before any broker or server starts."""
    for name, value, low, high in (("--boards", args.boards, 1, 1000), ("--plies", args.plies, 1, 1000),
                                   ("--port", args.port, 0, 65535)):
        if not low <= value <= high:
            raise CommandError(f"{name} must be between {low} and {high}, not {value}", EXIT_USAGE)
    if not args.move_time >= 0:
        raise CommandError(f"--move-time must be 0 or more seconds, not {args.move_time}", EXIT_USAGE)
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise CommandError(f"--out {args.out}: not a folder", EXIT_USAGE)


async def demo_on_embedded_broker(args: argparse.Namespace, out: Path) -> int:
    """Run the demo through a broker inside this process (amqtt): no Mosquitto needed."""
    from touchmove.sim.demo import embedded_broker

    async with embedded_broker() as url:
        print(f"embedded broker on {url} (in this process)", flush=True)
        return await demo(args, BrokerConfig.from_url(url), out)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mqtt").setLevel(logging.ERROR)  # aiomqtt's "pending publish calls" notes
    check_options(args)
    out = args.out or Path(tempfile.mkdtemp(prefix="touchmove-broadcast-demo-"))
    earlier = set_aside_earlier_run(out)
    if earlier is not None:
        print(f"an earlier run's outputs in {out} moved to {earlier}", flush=True)
    try:
        if args.broker:
            broker = BrokerConfig.from_url(args.broker)
            try:   # an unreachable broker is an error at once, not retries and a timeout
                socket.create_connection((broker.host, broker.port), timeout=3).close()
            except OSError as exc:
                raise SystemExit(f"the broker {args.broker} is unreachable: {exc.strerror or exc}") from None
            return asyncio.run(demo(args, broker, out))
        if args.embedded_broker or not LocalBroker.available():
            return asyncio.run(demo_on_embedded_broker(args, out))
        with LocalBroker() as local:
            print(f"private Mosquitto on {local.url}", flush=True)
            return asyncio.run(demo(args, BrokerConfig(local.host, local.port), out))
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM or SIGHUP while the round was played: stopped cleanly
        return 0
