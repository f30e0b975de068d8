"""The broadcaster: the wiring of the parts that broadcast a round (every board, the alert feed, the public PGNs,
the arbiter's actions, the consoles' streams).

Pure asyncio, no network of its own: the MQTT consumer feeds :meth:`Broadcaster.handle` decoded
:class:`BridgeMessage` objects; the web server, the service and the tools reach the part that does the work. The
parts, each a public attribute, each behind a narrow interface:

- :attr:`~Broadcaster.storage`, :class:`~.round_storage.RoundStorage`: the round in memory and on disk (the
  tournament, the round, its boards, the console's state and its archive, the alert feed, the delay line, the
  version, the clocks), the rounds before it, the round schedule, the state files;
- :attr:`~Broadcaster.outputs`, :class:`~.public_outputs.PublicOutputs`: what the public sees (the delay, the
  public PGNs, their caches and ETags, whether the console is private) and the writer of ``round-<n>.pgn``;
- :attr:`~Broadcaster.ingest`, :class:`~.bridge_ingest.BridgeIngest`: the bridges' messages taken in, the bridges'
  states, the unknown boards, the kings in the centre;
- :attr:`~Broadcaster.actions`, :class:`~.arbiter_actions.ArbiterActions`: the arbiter's actions, and ``publish``,
  the way their commands go out (set by the service once its MQTT link exists);
- :attr:`~Broadcaster.streams`, :class:`~.console_streams.ConsoleStreams`: the consoles' event streams.

The broadcaster itself keeps only what joins several parts: opening a round, switching rounds (by hand or by the
schedule), the status and the dashboard's snapshot, and handling a message only once the round is read. The
constructor reads and writes nothing: :meth:`Broadcaster.open` reads the saved round (the service calls it when it
starts).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from touchmove.broadcast.arbiter_actions import ActionError, ArbiterActions, Publish
from touchmove.broadcast.board_view import alert_meanings
from touchmove.broadcast.bridge_ingest import BridgeIngest
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.console_streams import ConsoleStreams
from touchmove.broadcast.public_outputs import PublicOutputs
from touchmove.broadcast.round_storage import Floors, RoundStorage
from touchmove.broadcast.tournament import Tournament
from touchmove.clocks import SYSTEM_CLOCK, Clock

__all__ = ["ActionError", "Broadcaster", "Publish"]

log = logging.getLogger(__name__)


class Broadcaster:
    """The parts that broadcast the round (and serve the rounds before it, from their saved state), wired."""

    def __init__(self, tournament: Tournament, *, output_dir: Path | None = None,
                 publish: Publish | None = None, write_interval: float = 0.1,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        #: The consoles' event streams.
        self.streams = ConsoleStreams(lambda: self.storage.by_number)
        out = output_dir if output_dir is not None else tournament.settings.output_dir
        #: The round in memory and on disk.
        self.storage = RoundStorage(tournament, out, clock, self.streams)
        #: The public documents and their writer.
        self.outputs = PublicOutputs(self.storage, write_interval)
        #: The bridges' messages taken in.
        self.ingest = BridgeIngest(self.storage)
        # events at QoS 0, or over two connections, may come out of order: a later one waits for those before it
        self.ingest.hold_gaps = frozenset(i for i, b in enumerate(tournament.brokers)
                                          if b.subscribe_qos == 0 or b.events_standby)
        #: The arbiter's actions (their commands go out through ``actions.publish``).
        self.actions = ArbiterActions(self.storage, self.ingest.resync, publish)
        #: What each alert code means, for the dashboard.
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

    # -- rounds ------------------------------------------------------------------------------------
    def switch_round(self, number: int) -> dict[str, Any]:
        """Broadcast round ``number`` from now on (the arbiter's action, or the schedule). The round
        before is saved and stays served; games the bridges numbered so far belong to it."""
        storage = self.storage
        if number not in storage.tournament.rounds:
            raise ActionError(f"round {number} has no pairings in the tournament file")
        if number == storage.round.number:
            return {"round": number, "changed": False}
        try:
            storage.check_round(number)
        except ValueError as exc:
            raise ActionError(str(exc)) from None
        storage.save_state()
        with contextlib.suppress(OSError):
            self.outputs.write_now()
        old = storage.round.number
        storage.switch(number)
        self._round_opened()
        log.info("round %s -> round %s", old, number)
        storage.save_state()
        self.streams.notify("round", {"round": number, "previous": old})
        for cb in self._round_listeners:
            cb(number)
        self.streams.notify("snapshot", self.snapshot(svg=False))
        return {"round": number, "previous": old, "changed": True}

    async def run_schedule(self, period: float = 1.0) -> None:
        """Switch to a round when its ``start`` (in the file) has come (:meth:`.RoundStorage.scheduled_round`)."""
        while True:
            number = self.storage.scheduled_round()
            if number is not None:
                try:
                    self.switch_round(number)
                except (ActionError, OSError, ValueError) as exc:
                    log.error("switching to round %s failed: %s", number, exc)
            await asyncio.sleep(period)

    def on_round(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(round_number)`` after each switch of the round (the service re-assigns)."""
        self._round_listeners.append(callback)

    # -- what the round looks like, from every part -------------------------------------------------
    def status(self, *, arbiter: bool = True) -> dict[str, Any]:
        """What ``/status.json`` shows: the round, the delay, the bridges, the lichess push. Without
        ``arbiter`` during a delay, only what the delayed outputs show (no held games, no live counts)."""
        storage, outputs = self.storage, self.outputs
        boards = list(storage.by_number.values())
        delayed = outputs.delay > 0 and not arbiter
        if delayed:
            public = outputs.public_games()
            finished = sum(1 for games in public.values() if games and games[-1].result != "*")
        else:
            finished = sum(1 for v in boards if v.game.has_result)
        out = {
            "event": storage.tournament.event, "round": storage.round.number,
            "rounds": sorted(storage.tournament.rounds), "round_date": storage.round_date().isoformat(),
            "delay_minutes": outputs.delay / 60.0, "console_private": outputs.console_private,
            "boards": len(boards), "finished": finished,
            "held_games": [v.pairing.board for v in boards if v.games.held is not None],
            "needs_resync": [v.pairing.board for v in boards if v.games.live().needs_resync],
            "online": sum(1 for v in boards if v.online), "bridges": dict(self.ingest.bridges),
            "unknown_boards": self.ingest.unknown_boards, "rejected_events": sum(v.rejected for v in boards),
            "push": self.push_status() if self.push_status is not None else None,
        }
        if delayed:  # what the boards do now is for the arbiters until the delay has passed
            for key in ("held_games", "needs_resync", "rejected_events"):
                out.pop(key)
        return out

    def snapshot(self, *, svg: bool = True) -> dict[str, Any]:
        """Everything the dashboard shows; the pictures already rendered (the others follow as ``svg``)."""
        storage = self.storage
        t = storage.tournament
        if svg:
            self.streams.want_pictures(n for n, v in storage.by_number.items() if v.cached_svg() is None)
        return {
            "event": t.event, "site": t.site, "round": storage.round.number, "time_control": t.time_control,
            "rounds": sorted(t.rounds), "delay_minutes": self.outputs.delay / 60.0,
            "push": self.push_status() if self.push_status is not None else None,
            "boards": [storage.by_number[n].to_json(svg=svg) for n in sorted(storage.by_number)],
            "alerts": [a.to_json() for a in storage.alerts],
            "bridges": dict(self.ingest.bridges),
            "meanings": self.meanings,
        }

    # -- messages from the bridges -----------------------------------------------------------------
    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        """Apply one decoded bridge message (:meth:`.BridgeIngest.handle`; the broadcaster must be open: a message
        before it is a fault of the caller, never dropped in silence)."""
        if not self.opened:
            raise RuntimeError("Broadcaster.handle before open(): the round is not read yet")
        self.ingest.handle(msg, broker)
