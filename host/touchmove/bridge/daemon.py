"""The bridge daemon: serial boards in, rules engine per board, journal, MQTT out.

One :class:`BoardSession` per board id (from the board's ``hello``), each with its own rules engine. The parts,
built here by :class:`Bridge`, which hands each the collaborators it needs (never itself: no part reaches another
back through the bridge, and the bridge forwards no calls; callers name the part, ``bridge.ports.handle_lines``,
``bridge.pipeline.journal``):

* :class:`~touchmove.bridge.ports.BoardPorts`: serial ports found and opened, lines decoded, boards bound;
* :class:`~touchmove.bridge.pipeline.EventPipeline`: records to the engines, timers, the journal, checkpoints,
  events offered in order (the data path, restarts and checkpoints are described there);
* :class:`~touchmove.bridge.publisher.Publisher`: the topics and the retained state, on the MQTT link
  (:mod:`touchmove.bridge.mqtt_link`);
* :class:`~touchmove.bridge.commands.BridgeCommands` and :class:`~touchmove.bridge.admission.Admission`: the MQTT
  commands, and what ports bring in that the bridge refuses.

Nothing is opened when a :class:`Bridge` is made: :meth:`Bridge.open` (called by :meth:`Bridge.run`, or
``async with Bridge(config)``) takes the journal's lock and opens the journal, its seq floor and the checkpoint
key; :meth:`Bridge.run` closes them when it ends.

Elsewhere in this package: journal write errors (:mod:`~touchmove.bridge.journal_faults`), board identity
conflicts (:mod:`~touchmove.bridge.identity`), the ``touchmove run`` command line
(:mod:`~touchmove.bridge.command`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from touchmove import records
from touchmove.bridge.admission import Admission
from touchmove.bridge.commands import BridgeCommands
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.bridge.pipeline import CHECKPOINT_EVERY, MAX_BACKLOG, EventPipeline
from touchmove.bridge.ports import BoardPorts
from touchmove.bridge.publisher import Publisher, plies_in_pgn
from touchmove.bridge.session import BoardSession
from touchmove.clocks import SYSTEM_CLOCK, Clock
from touchmove.config import BridgeConfig
from touchmove.mqtt import wire

__all__ = ["CHECKPOINT_EVERY", "MAX_BACKLOG", "Bridge"]

log = logging.getLogger("touchmove.bridge")


class Bridge:
    """The daemon. ``await bridge.run()`` serves until cancelled or :meth:`stop`."""

    def __init__(self, config: BridgeConfig, *, session: str | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        #: the one clock of the pipeline, the ports, the sessions and the vendor links (tests: a loop's virtual time)
        self.clock = clock
        self.session = session or uuid.uuid4().hex[:12]
        self.base = config.mqtt.base_topic
        self.boards: dict[str, BoardSession] = {}
        self.mqtt = BridgeLink(config.mqtt, on_command=self.on_command,
                               on_acked=lambda tag: self.pipeline.acked(*tag),
                               on_connected=lambda: self.publisher.connected())
        self.publisher = Publisher(self.mqtt, self.base, self.session, settle_ms=config.settle_ms,
                                   boards=self.boards, problems=self.problems)
        self.pipeline = EventPipeline(config, self.session, self.publisher, self.boards, clock=clock)
        self.admission = Admission(config.board_serials, alerts=self.pipeline, state=self.publisher)
        self.ports = BoardPorts(config.serial, pipeline=self.pipeline, publisher=self.publisher,
                                gate=self.admission, clock=clock)
        self.commands = BridgeCommands(pipeline=self.pipeline, publisher=self.publisher, ports=self.ports,
                                       replies=self.mqtt, clock=clock, problems=self.problems)
        self._stopped = asyncio.Event()

    # -- opening and closing ------------------------------------------------------------------------------
    def open(self) -> None:
        """Take the journal's lock, open the journal, its seq floor and the checkpoint key (see
        :meth:`EventPipeline.open`); done by :meth:`run` when not done before."""
        self.pipeline.open()

    def close(self) -> None:
        """Close the journal and its seq floor, release the journal's lock."""
        self.pipeline.close()

    async def __aenter__(self) -> Bridge:
        self.open()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.close()

    # -- the MQTT commands (touchmove.bridge.commands) ---------------------------------------------------
    async def on_command(self, topic: str, raw: bytes, retained: bool) -> None:
        """An MQTT command (a board's ``set`` or a bridge request): see :class:`BridgeCommands`."""
        await self.commands.on_command(topic, raw, retained)

    # -- after a crash while the journal could not write: the plies published, read back ----------------------
    def read_back_published(self) -> None:
        """Have the MQTT link read back, once connected and before it publishes, the retained PGN of every board
        whose events were published but never journaled: the plies as consumers got them, which the engine takes
        as the order of the plies it recovers from the board (:meth:`published_read`)."""
        boards = {self.publisher.topic(board, "pgn"): board for board, sess in self.boards.items()
                  if sess.published_unjournaled}
        if boards:
            self.mqtt.read_back(wire.published_filter(self.base), set(boards),
                                lambda found: self.published_read(found, boards))

    def published_read(self, found: Mapping[str, bytes], boards: Mapping[str, str]) -> None:
        """Give each board its plies read back (``found``: topic -> retained PGN; ``boards``: topic -> board) as a
        ``published`` record, journaled with source ``broker``; a PGN that is no game is logged and left."""
        for topic, board in boards.items():
            sess = self.boards.get(board)
            payload = found.get(topic)
            if sess is None or payload is None:
                log.warning("board %s: the plies it had published were not read back from the broker", board)
                continue
            plies = plies_in_pgn(payload)
            if plies is None:
                log.warning("board %s: its retained PGN read back is no game; not used", board)
                continue
            log.info("board %s: the %d plies it had published read back from the broker", board, len(plies))
            t = sess.now(self.clock.monotonic())
            sess.arrival_t, sess.arrival_host = t, self.clock.monotonic()
            self.pipeline.feed(sess, records.Published(t, plies), "broker")
        self.pipeline.schedule_flush()

    def problems(self) -> list[dict[str, Any]]:
        """Return what the operator should know about now (empty when all is well)."""
        return [*self.pipeline.journal_faults.problems(),
                *(c.as_dict() for c in self.ports.identity_conflicts.values()),
                *self.admission.problems(), *self.pipeline.resume_problems()]

    # -- running ------------------------------------------------------------------------------------------
    async def run(self) -> None:
        self.pipeline.loop = asyncio.get_running_loop()
        self.open()
        self.pipeline.restore()
        self.read_back_published()
        self.pipeline.journal.checkpoint_in_background()
        self.publisher.publish_info()
        self.pipeline.flush()
        tasks = [asyncio.create_task(self.mqtt.run(), name="mqtt"),
                 asyncio.create_task(self.ports.scan_loop(), name="scan"),
                 asyncio.create_task(self.pipeline.watch_journal(), name="journal watch")]
        try:
            await self._stopped.wait()
        finally:
            await self.shutdown(tasks)

    def stop(self) -> None:
        self._stopped.set()

    async def shutdown(self, tasks: list[asyncio.Task[None]]) -> None:
        scan = tasks[1]
        scan.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await scan
        await self.ports.close_all()
        self.pipeline.checkpoint_all()       # the next start replays nothing
        self.pipeline.journal_faults.stop()
        self.pipeline.flush()
        # Give the queue a moment to drain, then say goodbye.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                while self.mqtt.link.connected and self.mqtt.pending():
                    await asyncio.sleep(0.02)
        await self.mqtt.close(self.publisher.farewell())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.pipeline.flush()
        self.close()
