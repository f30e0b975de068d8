"""The broadcaster: every board of the round, the alert feed, the round PGN, the arbiter's actions.

Pure asyncio, no network of its own: the MQTT consumer feeds it :class:`BridgeMessage` objects, the web
server reads it and calls its actions, which go out through the ``publish`` function it is given. It wires
four parts, each behind a narrow interface: :class:`~.round_storage.RoundStorage` (the round in memory and
on disk), :class:`~.public_outputs.PublicOutputs` (the delay, the public PGNs, their caches and ETags, the
writer), :class:`~.bridge_ingest.BridgeIngest` (the bridges' messages) and
:class:`~.arbiter_actions.ArbiterActions`. The constructor reads and writes nothing: :meth:`Broadcaster.open`
reads the saved round (the service calls it when it starts).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from touchmove.broadcast.arbiter_actions import PROMOTION_PIECES, ActionError, ArbiterActions, Publish
from touchmove.broadcast.board_view import AlertEntry, BoardView, alert_meanings
from touchmove.broadcast.bridge_ingest import (
    REJECTIONS,
    REJECTS_LOG_EVERY,
    REJECTS_LOGGED,
    UNKNOWN_BOARDS_KEPT,
    UNKNOWN_BOARDS_LOGGED,
    UNKNOWN_BOARDS_SUM_EVERY,
    BridgeIngest,
)
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.console import ConsoleState
from touchmove.broadcast.console_streams import ConsoleStreams
from touchmove.broadcast.event_archive import EventArchive
from touchmove.broadcast.live_pgn import GameSnapshot
from touchmove.broadcast.public_outputs import PublicOutputs
from touchmove.broadcast.round_state import DelayLine, RoundRecord
from touchmove.broadcast.round_storage import ALERT_FEED_LIMIT, SAVE_INTERVAL, Floors, RoundStorage
from touchmove.broadcast.tournament import Round, Tournament
from touchmove.clocks import SYSTEM_CLOCK, Clock

__all__ = ["ALERT_FEED_LIMIT", "PROMOTION_PIECES", "REJECTIONS", "REJECTS_LOGGED", "REJECTS_LOG_EVERY",
           "SAVE_INTERVAL", "UNKNOWN_BOARDS_KEPT", "UNKNOWN_BOARDS_LOGGED", "UNKNOWN_BOARDS_SUM_EVERY",
           "ActionError", "Broadcaster", "Publish"]

log = logging.getLogger(__name__)


class Broadcaster:
    """All the boards of the round being broadcast (and the rounds before it, from their saved state)."""

    def __init__(self, tournament: Tournament, *, output_dir: Path | None = None,
                 publish: Publish | None = None, write_interval: float = 0.1,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        #: The consoles' event streams.
        self.streams = ConsoleStreams(lambda: self.storage.by_number)
        out = output_dir if output_dir is not None else tournament.settings.output_dir
        self.storage = RoundStorage(tournament, out, clock, self.streams)
        self.outputs = PublicOutputs(self.storage, write_interval)
        self.ingest = BridgeIngest(self.storage)
        # events at QoS 0, or over two connections, may come out of order: a later one waits for those before it
        self.ingest.hold_gaps = frozenset(i for i, b in enumerate(tournament.brokers)
                                          if b.subscribe_qos == 0 or b.events_standby)
        self.actions = ArbiterActions(self.storage, self.ingest.resync, publish)
        self.meanings = alert_meanings()
        self._round_listeners: list[Callable[[int], None]] = []
        #: The lichess push's status and token setter (set by the service when a push is configured).
        self.push_status: Callable[[], dict[str, Any]] | None = None
        self.set_lichess_token: Callable[[str], None] | None = None
        #: Whether :meth:`open` has read the round.
        self.opened = False

    def open(self) -> Broadcaster:
        """Read the round to broadcast (the one switched to, else the file's) from its saved state; raises
        ValueError for a state that cannot be taken. Returns the broadcaster."""
        self._open_round(self.storage.saved_round(), {})
        self.opened = True
        return self

    def _open_round(self, number: int, floors: Floors) -> None:
        self.storage.open(number, floors)
        self._round_opened()

    def _round_opened(self) -> None:
        self.outputs.round_opened()
        self.ingest.restore_console()
        self.storage.changed(None)

    # -- the parts' state, as the server, the service and the tests read it ------------------------
    @property
    def tournament(self) -> Tournament:
        return self.storage.tournament

    @property
    def output_dir(self) -> Path:
        return self.storage.output_dir

    @property
    def clock(self) -> Clock:
        """The clocks (injected by tests): the delay runs on the monotonic one, dates follow the wall one."""
        return self.storage.clock

    @property
    def round(self) -> Round:
        return self.storage.round

    @property
    def boards(self) -> dict[str, BoardView]:
        return self.storage.boards

    @property
    def by_number(self) -> dict[int, BoardView]:
        return self.storage.by_number

    @property
    def console(self) -> ConsoleState:
        return self.storage.console

    @property
    def archive(self) -> EventArchive:
        return self.storage.archive

    @property
    def alerts(self) -> list[AlertEntry]:
        return self.storage.alerts

    @property
    def delay_line(self) -> DelayLine:
        return self.storage.delay_line

    @property
    def version(self) -> int:
        return self.storage.version

    @property
    def written_version(self) -> int:
        return self.outputs.written_version

    @property
    def modified(self) -> dict[str, tuple[str, float]]:
        return self.outputs.modified

    @property
    def bridges(self) -> dict[str, str]:
        return self.ingest.bridges

    @property
    def unknown_boards(self) -> int:
        return self.ingest.unknown_boards

    @property
    def publish(self) -> Publish | None:
        return self.actions.publish

    @publish.setter
    def publish(self, publish: Publish | None) -> None:
        self.actions.publish = publish

    # -- rounds ------------------------------------------------------------------------------------
    def round_date(self, number: int | None = None) -> dt.date:
        return self.storage.round_date(number)

    def past_round(self, number: int) -> RoundRecord | None:
        return self.storage.past_round(number)

    def rounds_so_far(self) -> list[int]:
        return self.storage.rounds_so_far()

    def switch_round(self, number: int) -> dict[str, Any]:
        """Broadcast round ``number`` from now on (the arbiter's action, or the schedule). The round
        before is saved and stays served; games the bridges numbered so far belong to it."""
        if number not in self.tournament.rounds:
            raise ActionError(f"round {number} has no pairings in the tournament file")
        if number == self.round.number:
            return {"round": number, "changed": False}
        try:
            self.storage.check_round(number)
        except ValueError as exc:
            raise ActionError(str(exc)) from None
        self.storage.save_state()
        with contextlib.suppress(OSError):
            self.outputs.write_now()
        old = self.round.number
        self.storage.switch(number)
        self._round_opened()
        log.info("round %s -> round %s", old, number)
        self.storage.save_state()
        self.notify("round", {"round": number, "previous": old})
        for cb in self._round_listeners:
            cb(number)
        self.notify("snapshot", self.snapshot(svg=False))
        return {"round": number, "previous": old, "changed": True}

    def scheduled_round(self) -> int | None:
        """The latest round whose scheduled start has passed, when it is after the current one."""
        now = dt.datetime.fromtimestamp(self.clock.wall(), dt.UTC)
        due = [n for n, r in self.tournament.rounds.items() if r.start is not None and r.start <= now]
        latest = max(due, default=None)
        return latest if latest is not None and latest > self.round.number else None

    def confirm_kings(self) -> None:
        """Take the kings that have stood in the centre long enough as their boards' results
        (:meth:`~.bridge_ingest.BridgeIngest.confirm_kings`: a board whose occupancy stays as it is says nothing
        more)."""
        for view in list(self.storage.boards.values()):
            if view.kings_seen is not None:
                self.ingest.confirm_kings(view)

    async def run_kings(self, period: float = 0.25) -> None:
        """Confirm the kings in the centre every ``period`` seconds (:meth:`confirm_kings`)."""
        while True:
            self.confirm_kings()
            await asyncio.sleep(period)

    async def run_schedule(self, period: float = 1.0) -> None:
        """Switch to a round when its ``start`` (in the file) has come."""
        while True:
            number = self.scheduled_round()
            if number is not None:
                try:
                    self.switch_round(number)
                except (ActionError, OSError, ValueError) as exc:
                    log.error("switching to round %s failed: %s", number, exc)
            await asyncio.sleep(period)

    def on_round(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(round_number)`` after each switch of the round (the service re-assigns)."""
        self._round_listeners.append(callback)

    # -- files -------------------------------------------------------------------------------------
    @property
    def pgn_path(self) -> Path:
        return self.outputs.pgn_path

    def record(self) -> RoundRecord:
        return self.storage.record()

    def save_state(self) -> None:
        self.storage.save_state()

    def save_if_due(self) -> None:
        """Save the round state if a result or a new game needs it (the writer calls this)."""
        self.storage.save_if_due()

    # -- the outputs (:mod:`.public_outputs`) ------------------------------------------------------
    @property
    def delay(self) -> float:
        return self.outputs.delay

    @property
    def console_private(self) -> bool:
        return self.outputs.console_private

    def live_games(self) -> dict[int, tuple[GameSnapshot, ...]]:
        return self.storage.live_games()

    def round_pgn(self) -> str:
        return self.outputs.round_pgn()

    def public_games(self, number: int | None = None) -> dict[int, tuple[GameSnapshot, ...]]:
        return self.outputs.public_games(number)

    def public_pgn(self, number: int | None = None, boards: range | None = None) -> str:
        return self.outputs.public_pgn(number, boards)

    def public_game_pgn(self, number: int, board: int, entry: int = 1) -> str | None:
        return self.outputs.public_game_pgn(number, board, entry)

    def all_rounds_pgn(self) -> str:
        return self.outputs.all_rounds_pgn()

    def on_pgn(self, callback: Callable[[str], None]) -> None:
        self.outputs.on_pgn(callback)

    def write_now(self) -> Path:
        return self.outputs.write_now()

    async def run_writer(self) -> None:
        await self.outputs.run_writer()

    def status(self, *, arbiter: bool = True) -> dict[str, Any]:
        """What ``/status.json`` shows: the round, the delay, the bridges, the lichess push. Without
        ``arbiter`` during a delay, only what the delayed outputs show (no held games, no live counts)."""
        boards = list(self.by_number.values())
        delayed = self.delay > 0 and not arbiter
        if delayed:
            public = self.public_games()
            finished = sum(1 for games in public.values() if games and games[-1].result != "*")
        else:
            finished = sum(1 for v in boards if v.game.has_result)
        out = {
            "event": self.tournament.event, "round": self.round.number,
            "rounds": sorted(self.tournament.rounds), "round_date": self.round_date().isoformat(),
            "delay_minutes": self.delay / 60.0, "console_private": self.console_private,
            "boards": len(boards), "finished": finished,
            "held_games": [v.pairing.board for v in boards if v.games.held is not None],
            "needs_resync": [v.pairing.board for v in boards if v.games.live().needs_resync],
            "online": sum(1 for v in boards if v.online), "bridges": dict(self.bridges),
            "unknown_boards": self.unknown_boards, "rejected_events": sum(v.rejected for v in boards),
            "push": self.push_status() if self.push_status is not None else None,
        }
        if delayed:  # what the boards do now is for the arbiters until the delay has passed
            for key in ("held_games", "needs_resync", "rejected_events"):
                out.pop(key)
        return out

    # -- the consoles' event streams (:mod:`.console_streams`) -------------------------------------
    def listen(self, *, svg: bool = True) -> asyncio.Queue[tuple[str, dict[str, Any]]]:
        """A queue of updates for one stream; ``svg=False``: without pictures (the console draws its own)."""
        return self.streams.listen(svg=svg)

    def unlisten(self, queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
        self.streams.unlisten(queue)

    def notify(self, kind: str, data: dict[str, Any]) -> None:
        self.streams.notify(kind, data)

    def flush_notifications(self) -> None:
        """Send one ``board`` update per changed board now (the streams' notifier does it every 25 ms)."""
        self.streams.flush()

    def snapshot(self, *, svg: bool = True) -> dict[str, Any]:
        """Everything the dashboard shows; the pictures already rendered (the others follow as ``svg``)."""
        t = self.tournament
        if svg:
            self.streams.want_pictures(n for n, v in self.by_number.items() if v.cached_svg() is None)
        return {
            "event": t.event, "site": t.site, "round": self.round.number, "time_control": t.time_control,
            "rounds": sorted(t.rounds), "delay_minutes": self.delay / 60.0,
            "push": self.push_status() if self.push_status is not None else None,
            "boards": [self.by_number[n].to_json(svg=svg) for n in sorted(self.by_number)],
            "alerts": [a.to_json() for a in self.alerts],
            "bridges": dict(self.bridges),
            "meanings": self.meanings,
        }

    # -- messages from the bridges (:mod:`.bridge_ingest`) -----------------------------------------
    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        """Apply one decoded bridge message (the broadcaster must be open: a message before it is a fault of the
        caller, never dropped in silence)."""
        if not self.opened:
            raise RuntimeError("Broadcaster.handle before open(): the round is not read yet")
        self.ingest.handle(msg, broker)

    # -- the arbiter's actions (:mod:`.arbiter_actions`) -------------------------------------------
    def acknowledge(self, alert_id: int, by: str | None = None) -> AlertEntry:
        return self.actions.acknowledge(alert_id, by)

    def view(self, board: int) -> BoardView:
        return self.actions.view(board)

    async def promote(self, board: int, piece: str) -> dict[str, Any]:
        return await self.actions.promote(board, piece)

    async def takeback(self, board: int, ply: int) -> dict[str, Any]:
        return await self.actions.takeback(board, ply)

    async def setup(self, board: int, fen: str, chess960: bool = False) -> dict[str, Any]:
        return await self.actions.setup(board, fen, chess960)

    async def assign(self, board: int) -> dict[str, Any]:
        return await self.actions.assign(board)

    def record_result(self, board: int, result: str, entry: int | None = None) -> dict[str, Any]:
        return self.actions.record_result(board, result, entry)

    def permit_game(self, board: int, allow: str | None) -> dict[str, Any]:
        return self.actions.permit_game(board, allow)
