"""The boards a LiveChess-compatible server lists, followed from the bridges' MQTT messages, and their JSON.

One :class:`EBoard` per board id seen under the configured base topics: its game (a
:class:`~touchmove.broadcast.live_pgn.LiveGame`, the broadcaster's, fed the same checked events and the retained
PGN), whether it is online or silent, whether it shows the game's position, its clock and the ``flipped`` flag.
:class:`EBoards` takes the decoded messages (:mod:`touchmove.broadcast.bridge_topics`) and says which boards
changed; what LiveChess's clients read is built by :meth:`EBoard.listing` and :meth:`EBoard.feed`, with the JSON
types LiveChess uses (strings, integers, booleans and nulls exactly; a client compares them strictly).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import chess
import chess.pgn

from touchmove.broadcast import bridge_topics
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.live_pgn import LiveGame, _epoch_ms
from touchmove.mqtt.events import check_event

log = logging.getLogger(__name__)

#: LiveChess's board states (``DELAYED`` is never given: the bridge has no such reading).
ACTIVE, INACTIVE, NOTRESPONDING = "ACTIVE", "INACTIVE", "NOTRESPONDING"
#: Every touchmove board, and the vendor boards the bridge reads over a cable, is powered from the USB port.
USB_POWERED = "100%"


@dataclass
class Clock:
    """The clock as the last press left it: seconds left per side, who runs, when it was read (epoch ms)."""

    white: int | None = None
    black: int | None = None
    #: True while White's clock runs, False while Black's (after a press by the other side).
    run: bool | None = None
    time: int | None = None

    def to_json(self) -> dict[str, Any] | None:
        if self.white is None or self.black is None:
            return None     # until both sides pressed once: LiveChess's null for a board without a clock
        return {"white": self.white, "black": self.black, "run": self.run, "time": self.time}


@dataclass
class EBoard:
    """One board as a LiveChess client sees it."""

    serial: str
    base: str
    broker: int = 0
    online: bool | None = None
    #: A vendor board's adapter said the board stopped answering (``board_silent``), until ``board_answering``.
    silent: bool = False
    bridge_online: bool = True
    in_sync: bool = True
    flipped: bool = False
    game: LiveGame = field(default_factory=LiveGame)
    clock: Clock = field(default_factory=Clock)
    #: The game number the bridge's retained state names (its PGN is adopted when ours is older).
    state_game: int | None = None
    bridge_pgn: str | None = None
    #: A client called ``setup`` on this board: from then on feeds carry ``start``, ``san`` and ``match``.
    set_up: bool = False
    #: Events seen, per bridge session (QoS 1 redeliveries are dropped by seq).
    seen_seq: dict[str, int] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """LiveChess's word for whether the board can be used."""
        if not self.online or not self.bridge_online:
            return INACTIVE
        return NOTRESPONDING if self.silent else ACTIVE

    def placement(self) -> str:
        """The piece placement of the game's position (White's view): what the board shows when in step."""
        return self.game.position().board_fen()

    def listing(self) -> dict[str, Any]:
        """The board in the ``eboards`` list (and ``GET /api/v1.0/eboards``)."""
        return {"serialnr": self.serial, "source": f"mqtt:{self.base}", "state": self.state,
                "battery": USB_POWERED, "comment": None, "board": self.placement(), "flipped": self.flipped,
                "clock": self.clock.to_json()}

    def san(self) -> list[str]:
        """The moves of the board's game since its start (a ``setup`` starts a game) in SAN."""
        return [ply.san for ply in self.game.moves]

    def feed(self, san: list[str] | None = None) -> dict[str, Any]:
        """A feed's ``param``; once the board was set up through the API also ``start``, ``san`` (``san``: a list
        to send instead of the game's, a correction's common part) and ``match``."""
        param: dict[str, Any] = {"serialnr": self.serial, "flipped": self.flipped, "board": self.placement(),
                                 "clock": self.clock.to_json()}
        if self.set_up:
            param["start"] = self.game.start_fen
            param["san"] = self.san() if san is None else san
            param["match"] = self.in_sync
        return param


#: What a change of a board means for its feeds: the SAN lists to send, in order (one normally; a correction
#: of a ply already sent is first its common part, as a takeback, then the corrected list).
Feeds = list[list[str] | None]
Listener = Callable[[EBoard, Feeds], None]


class EBoards:
    """Every board seen on the brokers, kept up to date; ``listener`` hears of each change."""

    def __init__(self, listener: Listener | None = None, only: Iterable[str] = ()) -> None:
        self.boards: dict[str, EBoard] = {}
        self.listener = listener
        #: Board ids to list, in this order (empty: every board seen, by id).
        self.only = tuple(only)

    def listed(self) -> list[EBoard]:
        """The boards a client is shown, in order: the ``only`` ones seen, else every one by id."""
        if self.only:
            return [self.boards[s] for s in self.only if s in self.boards]
        return [self.boards[s] for s in sorted(self.boards)]

    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        """Take one decoded bridge message."""
        if msg.board_id is None:
            if msg.kind == "bridge_state" and isinstance(msg.payload, dict):
                online = msg.payload.get("state") != "offline"
                for board in self.boards.values():
                    if board.base == msg.base and board.bridge_online != online:
                        board.bridge_online = online
                        self._changed(board, [])
            return
        if self.only and msg.board_id not in self.only:
            return
        known = self.boards.get(msg.board_id)
        if known is None:
            if msg.kind == "response" or (msg.payload is None and msg.kind != "availability"):
                return     # a board seen only by a command's answer, or a cleared retained topic
            known = self.boards[msg.board_id] = EBoard(msg.board_id, msg.base, broker)
        board = known
        board.broker, board.base = broker, msg.base
        if msg.kind == "events" and isinstance(msg.payload, dict):
            self._event(board, msg.payload)
        elif msg.kind == "state" and isinstance(msg.payload, dict):
            state = bridge_topics.board_state(msg.payload)
            if state.game is not None:
                board.state_game = state.game
            if state.in_sync is not None and state.in_sync != board.in_sync:
                board.in_sync = state.in_sync
                self._changed(board, [None])
        elif msg.kind == "availability":
            online = msg.payload == "online" if msg.payload is not None else None
            if online != board.online:
                board.online = online
                self._changed(board, [])
        elif msg.kind == "pgn" and isinstance(msg.payload, str):
            board.bridge_pgn = msg.payload or None
            self._adopt(board)

    def _adopt(self, board: EBoard) -> None:
        """Take the game from the bridge's retained PGN when ours is missing, behind, or could not be followed."""
        live = board.game
        behind = board.state_game is not None and (live.number is None or board.state_game > live.number)
        if not board.bridge_pgn or not (live.needs_resync or behind or (live.number is None and not live.moves)):
            return
        try:
            pgn = chess.pgn.read_game(io.StringIO(board.bridge_pgn))
        except (ValueError, IndexError):
            return
        if pgn is None or pgn.errors:
            return
        before = board.san()
        if live.adopt(pgn, board.state_game):
            self._changed(board, self._feeds(before, board.san()))

    def _event(self, board: EBoard, event: dict[str, Any]) -> None:
        session, seq = event.get("session"), event.get("seq")
        if isinstance(session, str) and type(seq) is int:
            if seq <= board.seen_seq.get(session, 0):
                return      # a QoS 1 redelivery
            board.seen_seq[session] = seq
        if check_event(event) is not None:
            return
        kind = event["type"]
        if kind == "alert":
            code = event.get("code")
            if code in ("board_silent", "board_answering") and board.silent != (code == "board_silent"):
                board.silent = code == "board_silent"
                self._changed(board, [])
            return
        if kind == "clock":
            self._clock(board, event)
            return
        before = board.san()
        if board.game.apply(event):
            if kind == "game_start":
                board.clock = Clock()
            self._changed(board, self._feeds(before, board.san()))
        elif board.game.needs_resync:
            self._adopt(board)

    def _clock(self, board: EBoard, event: dict[str, Any]) -> None:
        """A press: the presser's time left (``remaining`` ms; null on a board whose clock shows no time)."""
        remaining, side = event.get("remaining"), event.get("side")
        if type(remaining) is not int or side not in ("white", "black"):
            return
        seconds = max(0, remaining) // 1000
        clock = board.clock
        if side == "white":
            clock.white = seconds
        else:
            clock.black = seconds
        clock.run = side == "black"     # the other side's clock starts
        clock.time = _epoch_ms(event.get("ts"))
        board.game.apply(event)      # the ply's clock time, as the broadcaster keeps it
        self._changed(board, [None])

    @staticmethod
    def _feeds(before: list[str], after: list[str]) -> Feeds:
        """The SAN lists that take a client from ``before`` to ``after``: a ply already sent that changed goes
        back to the common part first (the client counts new moves by the list's length, and would take a
        corrected list of the same length as no move)."""
        common = 0
        for old, new in zip(before, after, strict=False):
            if old != new:
                break
            common += 1
        if common < len(before) and common < len(after):
            return [after[:common], None]
        return [None]

    def _changed(self, board: EBoard, feeds: Feeds) -> None:
        if self.listener is not None:
            self.listener(board, feeds)
