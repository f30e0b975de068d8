"""The arbiter's actions: acknowledging alerts, results, further games, and commands to a board's bridge
(promotion piece, takeback, set-up, who plays).

They read and change the round through :class:`ActionTarget`; commands go out through ``publish`` (set by
the service once its MQTT link exists).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import chess

from touchmove.broadcast import bridge_topics
from touchmove.broadcast.board_view import AlertEntry, BoardView
from touchmove.broadcast.event_archive import EventArchive
from touchmove.broadcast.results import FORFEIT, is_forfeit, normalize_result
from touchmove.broadcast.round_state import Allow
from touchmove.broadcast.round_storage import now_iso
from touchmove.broadcast.tournament import Round, Tournament

log = logging.getLogger(__name__)

#: ``publish(broker_index, topic, payload)``: sends one MQTT message (QoS 1, not retained).
Publish = Callable[[int, str, bytes], Awaitable[None]]

PROMOTION_PIECES = ("q", "r", "b", "n")


class ActionError(Exception):
    """An arbiter action that cannot be done (unknown board, bad value, no bridge connection)."""


class ActionTarget(Protocol):
    """What the arbiter's actions read and change."""

    @property
    def tournament(self) -> Tournament: ...
    @property
    def round(self) -> Round: ...
    @property
    def by_number(self) -> dict[int, BoardView]: ...
    @property
    def alerts(self) -> list[AlertEntry]: ...
    @property
    def archive(self) -> EventArchive: ...

    def changed(self, view: BoardView | None, *, game_changed: bool = True) -> None: ...
    def save_state(self) -> None: ...
    def notify(self, kind: str, data: dict[str, Any]) -> None: ...


class ArbiterActions:
    """Every action of the console's arbiter API; each raises :class:`ActionError` when it cannot be done."""

    def __init__(self, target: ActionTarget, resync: Callable[[BoardView], None],
                 publish: Publish | None = None) -> None:
        self.target = target
        #: Takes the bridge's retained PGN for a board again (a declared result cleared lets its plies in).
        self.resync = resync
        self.publish = publish
        self._transactions = 0

    def acknowledge(self, alert_id: int, by: str | None = None) -> AlertEntry:
        for entry in self.target.alerts:
            if entry.id == alert_id:
                if not entry.acked:
                    entry.acked, entry.acked_at, entry.acked_by = True, now_iso(), by
                    if entry.board is not None and entry.key:
                        self.target.archive.add_ack(entry.board, entry.key, by, entry.acked_at)
                    self.target.notify("ack", entry.to_json())
                return entry
        raise ActionError(f"no alert {alert_id}")

    def view(self, board: int) -> BoardView:
        try:
            return self.target.by_number[board]
        except KeyError:
            raise ActionError(f"no board {board} in round {self.target.round.number}") from None

    async def _send(self, view: BoardView, name: str, **fields: Any) -> dict[str, Any]:
        if self.publish is None:
            raise ActionError("not connected to a bridge")
        base = view.base or self.target.tournament.brokers[view.broker].bases[0]
        topic = bridge_topics.set_topic(base, view.pairing.board_id)
        self._transactions += 1
        fields["transaction"] = f"arbiter-{self._transactions}"
        payload = bridge_topics.command(name, **fields)
        await self.publish(view.broker, topic, payload)
        log.info("arbiter: %s %s", topic, payload.decode())
        return {"topic": topic, "payload": json.loads(payload)}

    async def promote(self, board: int, piece: str) -> dict[str, Any]:
        piece = piece.lower()
        if piece not in PROMOTION_PIECES:
            raise ActionError(f"promotion piece must be one of {', '.join(PROMOTION_PIECES)}")
        return await self._send(self.view(board), "promote", piece=piece)

    async def takeback(self, board: int, ply: int) -> dict[str, Any]:
        view = self.view(board)
        if ply < 1 or ply > view.game.ply:
            raise ActionError(f"takeback ply must be between 1 and {view.game.ply}")
        return await self._send(view, "takeback", ply=ply)

    async def setup(self, board: int, fen: str, chess960: bool = False) -> dict[str, Any]:
        try:
            position = chess.Board(fen, chess960=chess960)
        except ValueError as exc:
            raise ActionError(f"bad FEN: {exc}") from None
        if not position.is_valid():
            raise ActionError("the FEN is not a valid position")
        view = self.view(board)
        sent = await self._send(view, "setup", fen=position.fen(), chess960=chess960)
        games = view.games
        if games.allow is None and games.held is None and (games.current.ply or games.current.has_result):
            # the game the arbiter sets up is the round's: in place of an unfinished one, after a finished one
            games.permit(Allow.NEXT if games.current.has_result else Allow.REPLACE)
            self.target.changed(view)
        return sent

    async def assign(self, board: int) -> dict[str, Any]:
        """Tell the bridge who plays on a board (so its own PGN carries the names)."""
        view = self.view(board)
        p = view.pairing
        return await self._send(view, "assign", round=str(self.target.round.number), board=str(p.board),
                                white=p.white.name, black=p.black.name)

    def record_result(self, board: int, result: str, entry: int | None = None) -> dict[str, Any]:
        """Record the arbiter's result (``*`` clears it) for the board's game ``entry`` (from 1; the
        latest by default): it wins over the board and the kings; a forfeit's spelling (``1-0f``, ``0-1f``)
        is kept as a forfeit (reason ``forfeit``). Saved at once."""
        norm = normalize_result(result)
        if norm is None:
            raise ActionError(f"unknown result {result!r}")
        view = self.view(board)
        entries = view.games.entries
        if entry is not None and not 1 <= entry <= len(entries):
            raise ActionError(f"board {board} has {len(entries)} game(s) in this round")
        game = entries[-1] if entry is None else entries[entry - 1]
        if game.set_result("arbiter", norm, FORFEIT if is_forfeit(result) and norm != "*" else None):
            if game.needs_resync and game is view.games.live():
                self.resync(view)  # a declared result cleared: the plies the bridge shows since come in
            self.target.changed(view)
            self.target.save_state()
        return view.to_json()

    def _check_lichess_room(self, board: int) -> None:
        """Refuse a further game on ``board`` that would take its lichess round over the games lichess takes
        by push (the round would otherwise lose games silently there)."""
        t = self.target.tournament
        limit = t.settings.lichess_max_games
        for target in t.lichess_targets(self.target.round.number):
            if board not in target.boards:
                continue
            games = sum(len(v.games.entries) + (1 if v.games.allow is Allow.NEXT else 0)
                        for n, v in self.target.by_number.items() if n in target.boards)
            if games + 1 > limit:
                raise ActionError(f"lichess round {target.round_id} would get {games + 1} games, above the "
                                  f"{limit} lichess takes by push: give boards {target.boards.start}-"
                                  f"{target.boards.stop - 1} another lichess round first")

    def permit_game(self, board: int, allow: str | None) -> dict[str, Any]:
        """The arbiter allows the board's next game (``next``: a further game of the board in the round;
        ``replace``: it replaces the round's game; None: withdraw). A game already held is taken at once."""
        try:
            mode = Allow(allow) if allow not in (None, "", "none") else None
        except ValueError:
            raise ActionError("allow must be next, replace or none") from None
        view = self.view(board)
        if mode is Allow.NEXT:
            self._check_lichess_room(board)
        done = view.games.permit(mode)
        log.info("arbiter: board %s: %s", board, done)
        self.target.changed(view)
        self.target.save_state()
        return {**view.to_json(), "done": done}
