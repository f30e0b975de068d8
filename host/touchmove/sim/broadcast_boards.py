"""Simulated bridges: bridge-shaped MQTT messages for the demo, the tests and the benchmark.

A :class:`SimBridge` publishes what a ``touchmove run`` bridge would (see ``## MQTT topics`` in the
README): its retained state, and per board the retained availability, state and PGN and the QoS 1 event
stream with ``board``, ``seq``, ``session`` and ``ts``. Moves are real: python-chess checks and plays them.

:class:`SimRound` is the round the benchmarks play (``bench/broadcast_latency.py``, ``bench/dashboard_latency.py``):
N boards on a few bridges of one broker, described by :func:`round_toml`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiomqtt
import chess
import chess.pgn

from touchmove.broadcast.bridge_ingest import KINGS_STEADY_S
from touchmove.broadcast.results import CENTRE, result_from_king_squares
from touchmove.mqtt import wire


def iso_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class SimBridge:
    """One simulated bridge on a connected aiomqtt client."""

    def __init__(self, client: aiomqtt.Client, base: str = "touchmove", *, publish_pgn: bool = True) -> None:
        self.client = client
        self.base = base
        self.session = uuid.uuid4().hex[:12]
        self.publish_pgn = publish_pgn
        self.boards: dict[str, SimBoard] = {}
        self._t0 = time.monotonic()

    def t(self) -> int:
        return int((time.monotonic() - self._t0) * 1000)

    async def publish(self, topic: str, payload: Any, *, retain: bool = False) -> None:
        """Publish ``payload`` (text, or an object sent as JSON) on a full topic (see :mod:`touchmove.mqtt.wire`)."""
        data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
        await self.client.publish(topic, data.encode(), qos=1, retain=retain)

    async def online(self) -> None:
        await self.publish(wire.bridge_topic(self.base, "state"), {"state": "online"}, retain=True)
        info: wire.BridgeInfo = {"version": "sim", "session": self.session, "started": iso_now(),
                                 "boards": sorted(self.boards)}
        await self.publish(wire.bridge_topic(self.base, "info"), info, retain=True)

    async def offline(self) -> None:
        await self.publish(wire.bridge_topic(self.base, "state"), {"state": "offline"}, retain=True)

    def board(self, board_id: str) -> SimBoard:
        if board_id not in self.boards:
            self.boards[board_id] = SimBoard(self, board_id)
        return self.boards[board_id]

    async def clear_retained(self) -> None:
        """Remove this bridge's retained messages from the broker (end of a demo or test)."""
        topics = [wire.bridge_topic(self.base, leaf) for leaf in wire.BRIDGE_LEAVES]
        for board_id in self.boards:
            topics += [wire.board_topic(self.base, board_id, k) for k in ("availability", "state", "pgn")]
        for topic in topics:
            await self.client.publish(topic, b"", qos=1, retain=True)


class SimBoard:
    """One simulated board: every change is published as the bridge would."""

    def __init__(self, bridge: SimBridge, board_id: str) -> None:
        self.bridge = bridge
        self.board_id = board_id
        self.seq = 0
        self.game = 0
        self.position = chess.Board()
        self.clocks: list[int | None] = []
        self.in_sync = True
        self.occupancy: int | None = None
        self.result = "*"

    @property
    def ply(self) -> int:
        return len(self.position.move_stack)

    async def event(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Publish one event (``seq``, ``session``, ``board``, ``ts`` added); return it as sent."""
        self.seq += 1
        out = {"t": self.bridge.t(), **payload, "board": self.board_id, "seq": self.seq,
               "session": self.bridge.session, "ts": iso_now()}
        await self.bridge.publish(wire.board_topic(self.bridge.base, self.board_id, "events"), out)
        return out

    async def publish_state(self) -> None:
        occ = int(self.position.occupied) if self.occupancy is None else self.occupancy
        last = self.position.move_stack[-1].uci() if self.position.move_stack else None
        state: wire.BoardState = {
            "board": self.board_id, "game": self.game, "ply": self.ply, "fen": self.position.fen(),
            "last_move": last, "in_sync": self.in_sync, "occupancy": f"{occ:016x}",
            "game_over": self.result != "*", "session": self.bridge.session, "ts": iso_now(),
        }
        await self.bridge.publish(wire.board_topic(self.bridge.base, self.board_id, "state"), state, retain=True)
        if self.bridge.publish_pgn:
            await self.bridge.publish(wire.board_topic(self.bridge.base, self.board_id, "pgn"), self.pgn(),
                                      retain=True)

    def pgn(self) -> str:
        game = chess.pgn.Game.from_board(self.position)
        game.headers["Result"] = self.result
        for node, clk in zip(game.mainline(), self.clocks, strict=False):
            if clk is not None:
                node.set_clock(clk // 1000)
        return str(game)

    async def availability(self, online: bool) -> None:
        await self.bridge.publish(wire.board_topic(self.bridge.base, self.board_id, "availability"),
                                  {"state": "online" if online else "offline"}, retain=True)

    async def start(self, fen: str = chess.STARTING_FEN, chess960: bool = False) -> None:
        self.game += 1
        self.position = chess.Board(fen, chess960=chess960)
        self.clocks = []
        self.result = "*"
        self.occupancy = None
        self.in_sync = True
        await self.availability(True)
        await self.event({"type": "game_start", "game": self.game, "fen": self.position.fen(),
                          "chess960": chess960})
        await self.publish_state()

    async def move(self, uci: str, remaining_ms: int | None = None) -> dict[str, Any]:
        move = chess.Move.from_uci(uci)
        if not self.position.is_legal(move):
            raise ValueError(f"illegal move {uci} in {self.position.fen()}")
        san = self.position.san(move)
        self.position.push(move)
        self.clocks.append(remaining_ms)
        sent = await self.event({"type": "move", "game": self.game, "ply": self.ply, "uci": uci, "san": san,
                                 "fen": self.position.fen()})
        if remaining_ms is not None:
            await self.event({"type": "clock", "game": self.game, "ply": self.ply,
                              "side": "black" if self.position.turn else "white", "remaining": remaining_ms})
        await self.publish_state()
        return sent

    async def amend(self, uci: str) -> None:
        """Replace the last ply (e.g. the promotion piece confirmed)."""
        self.position.pop()
        move = chess.Move.from_uci(uci)
        san = self.position.san(move)
        self.position.push(move)
        await self.event({"type": "move_amended", "game": self.game, "ply": self.ply, "uci": uci, "san": san,
                          "fen": self.position.fen()})
        await self.publish_state()

    async def takeback(self, ply: int) -> None:
        while self.ply >= ply:
            self.position.pop()
            self.clocks.pop()
        await self.event({"type": "takeback", "game": self.game, "ply": ply, "fen": self.position.fen()})
        await self.publish_state()

    async def alert(self, code: str, article: str, detail: dict[str, Any] | None = None) -> dict[str, Any]:
        sent = await self.event({"type": "alert", "game": self.game, "code": code, "ply": self.ply + 1,
                                 "article": article, "detail": detail or {}})
        return sent

    async def end(self, result: str, reason: str, article: str = "") -> None:
        self.result = result
        await self.event({"type": "game_end", "game": self.game, "result": result, "reason": reason,
                          "article": article})
        await self.publish_state()

    async def kings_to_centre(self, result: str) -> None:
        """Players lift both kings and put them on the centre squares meaning ``result``, and leave them there
        while the broadcaster reads them (a reading must stand :data:`KINGS_STEADY_S`)."""
        free = [sq for sq in CENTRE if self.position.piece_at(sq) is None]
        pair = next(((a, b) for a in free for b in free
                     if a < b and result_from_king_squares(a, b) == result), None)
        if pair is None:
            raise ValueError(f"the centre squares are taken: cannot show {result}")
        occ = int(self.position.occupied)
        for king in (self.position.king(chess.WHITE), self.position.king(chess.BLACK)):
            if king is not None:
                occ &= ~chess.BB_SQUARES[king]
        self.occupancy = occ | chess.BB_SQUARES[pair[0]] | chess.BB_SQUARES[pair[1]]
        self.in_sync = False
        await self.publish_state()
        await asyncio.sleep(KINGS_STEADY_S + 0.5)


# -- a round of simulated boards, for the benchmarks ---------------------------------------------------------
def round_toml(event: str, boards: int, bridges: int, port: int, out: Path) -> str:
    """A tournament file for ``boards`` boards ``board-001``... on ``bridges`` bases ``bench-0``... of one
    broker (token ``bench``): what :class:`SimRound` plays."""
    lines = [
        f"event = {json.dumps(event)}", 'site = "localhost"', 'time_control = "180+2"', "round = 1", "",
        "[broadcast]", f"output_dir = {json.dumps(str(out))}", 'token = "bench"', "",
        "[[brokers]]", f'url = "mqtt://127.0.0.1:{port}"',
        "bases = [" + ", ".join(f'"bench-{i}"' for i in range(bridges)) + "]", "",
        "[[rounds]]", "number = 1", "",
    ]
    for n in range(1, boards + 1):
        lines += ["[[rounds.boards]]", f"board = {n}", f'board_id = "board-{n:03d}"',
                  f'white = {{ name = "White {n}", elo = {2600 - n} }}',
                  f'black = {{ name = "Black {n}", elo = {2590 - n} }}', ""]
    return "\n".join(lines)


class SimRound:
    """The boards of :func:`round_toml` on their simulated bridges, one MQTT client per bridge::

        async with SimRound(port, boards=200, bridges=4) as sim:
            await sim.start()                                  # every game at once
            await sim.random_move(board, number, rng, published, time.perf_counter)
        # the bridges' retained messages are cleared and the clients closed
    """

    def __init__(self, port: int, *, boards: int, bridges: int,
                 board_class: Callable[[SimBridge, str], SimBoard] = SimBoard) -> None:
        self.port = port
        self.count = boards
        self.clients = [aiomqtt.Client("127.0.0.1", port, max_queued_outgoing_messages=100_000)
                        for _ in range(bridges)]
        self.bridges: list[SimBridge] = []
        #: (board, its number in the round)
        self.boards: list[tuple[SimBoard, int]] = []
        self.board_class = board_class

    async def __aenter__(self) -> SimRound:
        for client in self.clients:
            await client.__aenter__()
        self.bridges = [SimBridge(c, f"bench-{i}") for i, c in enumerate(self.clients)]
        for bridge in self.bridges:
            await bridge.online()
        for n in range(1, self.count + 1):
            bridge = self.bridges[(n - 1) % len(self.bridges)]
            board_id = f"board-{n:03d}"
            board = bridge.boards[board_id] = self.board_class(bridge, board_id)
            self.boards.append((board, n))
        return self

    async def start(self) -> None:
        """Every board starts its game."""
        for board, _ in self.boards:
            await board.start()

    @staticmethod
    async def random_move(board: SimBoard, number: int, rng: random.Random,
                          published: dict[tuple[int, int], float], stamp: Callable[[], float]) -> None:
        """One random legal move with a random clock time; ``published[(number, ply)]`` notes ``stamp()``
        just before its event is published."""
        move = rng.choice(list(board.position.legal_moves))
        published[(number, board.ply + 1)] = stamp()
        await board.move(move.uci(), remaining_ms=rng.randrange(10_000, 180_000))

    async def clear_retained(self) -> None:
        for bridge in self.bridges:
            await bridge.clear_retained()

    async def __aexit__(self, *exc: object) -> None:
        for client in self.clients:
            await client.__aexit__(None, None, None)
