"""The bridge daemon: serial boards in, rules engine per board, journal, MQTT out.

One :class:`BoardSession` per board id (from the board's ``hello``), each with its own rules engine. The parts,
wired here by a thin :class:`Bridge`:

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
from pathlib import Path
from types import TracebackType
from typing import Any

from touchmove import records
from touchmove.bridge.admission import Admission
from touchmove.bridge.commands import BridgeCommands
from touchmove.bridge.journal import Journal
from touchmove.bridge.journal_lock import JournalLock
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.bridge.pipeline import CHECKPOINT_EVERY, MAX_BACKLOG, EventPipeline
from touchmove.bridge.ports import BoardPorts
from touchmove.bridge.publisher import Publisher, plies_in_pgn
from touchmove.bridge.seq_floor import SeqFloor
from touchmove.bridge.session import BoardSession
from touchmove.clocks import SYSTEM_CLOCK, Clock
from touchmove.config import BridgeConfig
from touchmove.mqtt import wire
from touchmove.serial.link import SerialLink

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
        self.mqtt = BridgeLink(config.mqtt, on_command=self.on_command, on_acked=self._on_acked,
                             on_connected=self._on_mqtt_connected)
        self.publisher = Publisher(self.mqtt, self.base, self.session, settle_ms=config.settle_ms,
                                   boards=self.boards, problems=self.problems)
        self.pipeline = EventPipeline(config, self.session, self.publisher, self.boards, clock=clock)
        self.stats = self.pipeline.stats
        self.ports = BoardPorts(self, config.serial)
        self.admission = Admission(self, config.board_serials)
        self.commands = BridgeCommands(self)
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

    # -- the parts' state, as the bridge's ----------------------------------------------------------------
    @property
    def _loop(self) -> asyncio.AbstractEventLoop | None:
        return self.pipeline.loop

    @_loop.setter
    def _loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.pipeline.loop = loop

    @property
    def journal(self) -> Journal:
        return self.pipeline.journal

    @property
    def journal_lock(self) -> JournalLock:
        return self.pipeline.journal_lock

    @property
    def seq_floor(self) -> SeqFloor:
        return self.pipeline.seq_floor

    @property
    def journal_set_aside(self) -> Path | None:
        return self.pipeline.journal_set_aside

    @property
    def journal_loss(self) -> dict[str, int]:
        """What the journal's bound made the bridge give up (records, events; see journal_faults)."""
        return self.pipeline.journal_faults.loss

    # -- the serial side (touchmove.bridge.ports) ---------------------------------------------------------
    @property
    def pending_lines(self) -> dict[SerialLink, list[bytes | None]]:
        """Lines of ports whose board has not said hello yet."""
        return self.ports.pending_lines

    def handle_lines(self, link: SerialLink, lines: list[bytes | None]) -> None:
        """Process lines from one port (event loop)."""
        self.ports.handle_lines(link, lines)

    def handle_closed(self, link: SerialLink, reason: str) -> None:
        """A port closed (unplugged, an error, shutdown)."""
        self.ports.handle_closed(link, reason)

    def request_snapshot(self, sess: BoardSession, *, force: bool = False) -> None:
        """Ask a board for its occupancy (at most every SNAPSHOT_INTERVAL unless ``force``)."""
        self.ports.request_snapshot(sess, force=force)

    # -- the event pipeline (touchmove.bridge.pipeline) ---------------------------------------------------
    def restore(self) -> None:
        """Rebuild every board known to the journal and queue the events not yet published."""
        self.pipeline.restore()

    def event_loop(self) -> asyncio.AbstractEventLoop:
        return self.pipeline.event_loop()

    def bind_board(self, board: str, min_settle_ms: int = 0) -> BoardSession:
        """Return the session of a board that said hello (made, and journaled, when the bridge did not know it)."""
        return self.pipeline.bind(board, min_settle_ms)

    def board_now(self, sess: BoardSession) -> int:
        """Estimate the board's current device time."""
        return sess.now(self.clock.monotonic())

    def feed(self, sess: BoardSession, record: records.Record, source: str) -> None:
        """Journal one record for a board and run it through its engine."""
        self.pipeline.feed(sess, record, source)

    def emit_bridge_alert(self, sess: BoardSession, code: str, detail: dict[str, Any]) -> None:
        """Publish (and journal) an alert the bridge raises itself, in the board's event stream."""
        self.pipeline.emit_bridge_alert(sess, code, detail)

    def checkpoint(self, sess: BoardSession) -> None:
        """Journal the board's engine as it is now: a restart replays only what comes after."""
        self.pipeline.checkpoint(sess)

    def mark(self, sess: BoardSession) -> None:
        """Note that a board has something to save or to publish at the next flush."""
        self.pipeline.mark(sess)

    def schedule_flush(self) -> None:
        self.pipeline.schedule_flush()

    def flush(self) -> None:
        """Commit the journal, then hand newly journaled events to MQTT (never the other way round)."""
        self.pipeline.flush()

    def journal_status(self) -> dict[str, Any]:
        """Return the journal's health: whether it writes, why not, and what is held or was given up."""
        return self.pipeline.journal_status()

    def _on_acked(self, tag: Any) -> None:
        board, seq = tag
        self.pipeline.acked(board, seq)

    # -- publishing (touchmove.bridge.publisher) ----------------------------------------------------------
    def topic(self, board: str, leaf: str) -> str:
        return self.publisher.topic(board, leaf)

    def state_payload(self, sess: BoardSession) -> dict[str, Any]:
        return self.publisher.state_payload(sess)

    def pgn_text(self, sess: BoardSession, game_index: int = -1) -> str:
        return self.publisher.pgn_text(sess, game_index)

    def publish_board_retained(self, sess: BoardSession) -> None:
        self.publisher.publish_board_retained(sess)

    def board_online(self, sess: BoardSession) -> None:
        self.publisher.board_online(sess)

    def board_offline(self, board: str) -> None:
        self.publisher.board_offline(board)

    def publish_bridge_state(self) -> None:
        self.publisher.publish_bridge_state()

    def _on_mqtt_connected(self) -> None:
        self.publisher.connected()

    async def on_command(self, topic: str, raw: bytes, retained: bool) -> None:
        """An MQTT command (a board's ``set`` or a bridge request): see :class:`BridgeCommands`."""
        await self.commands.on_command(topic, raw, retained)

    # -- after a crash while the journal could not write: the plies published, read back ----------------------
    def read_back_published(self) -> None:
        """Have the MQTT link read back, once connected and before it publishes, the retained PGN of every board
        whose events were published but never journaled: the plies as consumers got them, which the engine takes
        as the order of the plies it recovers from the board (:meth:`published_read`)."""
        boards = {self.topic(board, "pgn"): board for board, sess in self.boards.items()
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
            t = self.board_now(sess)
            sess.arrival_t, sess.arrival_host = t, self.clock.monotonic()
            self.feed(sess, records.Published(t, plies), "broker")
        self.schedule_flush()

    def problems(self) -> list[dict[str, Any]]:
        """Return what the operator should know about now (empty when all is well)."""
        return [*self.pipeline.journal_faults.problems(),
                *(c.as_dict() for c in self.ports.identity_conflicts.values()),
                *self.admission.problems(), *self.pipeline.resume_problems()]

    # -- running ------------------------------------------------------------------------------------------
    async def run(self) -> None:
        self.pipeline.loop = asyncio.get_running_loop()
        self.open()
        self.restore()
        self.read_back_published()
        self.journal.checkpoint_in_background()
        self.publisher.publish_info()
        self.flush()
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
        self.flush()
        # Give the queue a moment to drain, then say goodbye.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                while self.mqtt.connected and self.mqtt.pending():
                    await asyncio.sleep(0.02)
        await self.mqtt.close(self.publisher.farewell())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.flush()
        self.close()
