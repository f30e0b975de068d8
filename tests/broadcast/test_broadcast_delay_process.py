"""A delayed round through the real ``touchmove broadcast`` process and a real Mosquitto: the broadcaster is
killed with SIGKILL in the middle of the round and started again; the public PGN never loses a ply and never
shows one younger than the delay."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import aiohttp
import aiomqtt
import chess
import chess.pgn

from tests.broadcast.broadcast_helpers import plies, start_broadcaster, wait_seen
from touchmove.sim.broadcast_boards import SimBridge
from touchmove.sim.local_broker import LocalBroker, free_port

DELAY_S = 3.0
MOVE_EVERY_S = 0.2
PLIES = 60
BOARDS = ("d01", "d02")


def config(tmp_path: Path, broker: LocalBroker) -> Path:
    boards = "".join(f'[[rounds.boards]]\nboard_id = "{b}"\nwhite = "White {i}"\nblack = "Black {i}"\n'
                     for i, b in enumerate(BOARDS, 1))
    path = tmp_path / "tournament.toml"
    path.write_text(f"""event = "Delay Open"
site = "Here"
time_control = "600+5"
round = 1

[broadcast]
output_dir = "out"
delay_minutes = {DELAY_S / 60}

[[brokers]]
url = "{broker.url}"

[[rounds]]
number = 1
{boards}""", encoding="utf-8")
    return path


def next_move(board: chess.Board, salt: int) -> chess.Move:
    """A legal move chosen by ``salt`` that does not end the game (the round must last)."""
    moves = sorted(board.legal_moves, key=lambda m: m.uci())
    for k in range(len(moves)):
        move = moves[(salt + k) % len(moves)]
        board.push(move)
        over = board.is_game_over()
        board.pop()
        if not over:
            return move
    raise AssertionError("every move ends the game")


async def start(cfg: Path, port: int, run: int) -> asyncio.subprocess.Process:
    return await start_broadcaster(cfg, port, cfg.parent / f"broadcaster-{run}.log")


def test_sigkill_during_a_delayed_round_drops_no_public_ply(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_sigkill(broker, tmp_path))


async def _sigkill(broker: LocalBroker, tmp_path: Path) -> None:
    cfg = config(tmp_path, broker)
    port = free_port()
    url = f"http://127.0.0.1:{port}/round/1.pgn"
    played: dict[int, list[float]] = {i: [] for i in range(len(BOARDS))}  # when each ply was published
    polls: list[tuple[float, list[int]]] = []  # (when the answer came, each board's public plies)
    proc = await start(cfg, port, 1)
    procs = [proc]
    killed_after: list[int] = []

    async def poll(http: aiohttp.ClientSession, until: float) -> None:
        while time.monotonic() < until:
            try:
                async with http.get(url, timeout=aiohttp.ClientTimeout(total=1)) as resp:
                    text = await resp.text()
                polls.append((time.monotonic(), plies(text)))
            except (aiohttp.ClientError, TimeoutError):
                pass  # not serving (starting, or killed)
            await asyncio.sleep(0.05)

    try:
        async with aiomqtt.Client("127.0.0.1", broker.port) as client, aiohttp.ClientSession() as http:
            bridge = SimBridge(client)
            sims = [bridge.board(b) for b in BOARDS]
            await bridge.online()
            await wait_seen(http, port, proc, bridge.base)  # a start sent before it subscribed is lost to it
            for sim in sims:
                await sim.start()
            poller = asyncio.create_task(poll(http, time.monotonic() + 600))
            boards = [chess.Board() for _ in sims]
            for ply in range(1, PLIES + 1):
                for i, sim in enumerate(sims):
                    move = next_move(boards[i], ply * 7 + i * 3)
                    boards[i].push(move)
                    played[i].append(time.monotonic())  # before it is sent: the broadcaster gets it later
                    await sim.move(move.uci(), remaining_ms=600_000 - ply * 1000)
                if ply == 35:  # SIGKILL in the middle of the delayed round, and a restart 0.5 s later
                    killed_after.extend(polls[-1][1])
                    proc.send_signal(signal.SIGKILL)
                    await proc.wait()
                    await asyncio.sleep(0.5)
                    proc = await start(cfg, port, 2)
                    procs.append(proc)
                await asyncio.sleep(MOVE_EVERY_S)
            # the rest comes when due (however slow the machine was at playing)
            deadline = time.monotonic() + DELAY_S + 20
            while polls[-1][1] != [PLIES] * len(BOARDS) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.3)  # a few polls more: nothing is taken back afterwards either
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
            await bridge.clear_retained()
    finally:
        for p in procs:
            if p.returncode is None:
                p.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(p.wait(), 20)
                except TimeoutError:
                    p.kill()
                    await p.wait()
    assert min(killed_after) >= 10, f"too little public before the kill to test anything: {killed_after}"
    last = [0] * len(BOARDS)
    for when, counts in polls:
        assert len(counts) == len(BOARDS)
        for i, count in enumerate(counts):
            # never less: no ply that was public is taken back (across the kill too)
            assert count >= last[i], f"board {i + 1}: {last[i]} public plies, then {count}"
            # never more: no ply is public before the delay has passed since it was played
            if count:
                assert played[i][count - 1] + DELAY_S <= when + 0.05, f"board {i + 1}: ply {count} too early"
        last = counts
    assert last == [PLIES] * len(BOARDS), f"not every ply came (the broadcasters' logs: {tmp_path}/*.log)"
    # the start banner says what the delay does not hold back
    assert "MQTT viewers see live play" in (tmp_path / "broadcaster-1.log").read_text()
