"""The bridge daemon: serial boards in, rules engine per board, journal, MQTT out.

One :class:`BoardSession` per board id (from the board's ``hello``), each with its own rules engine. Data
path for one batch of lines from a port (all in the event loop):

    decode -> seq check -> board time -> journal the record -> engine.feed -> journal the events
    -> (after the batch) journal commit -> offer events to MQTT -> ack -> journal "published" mark

A timer per board calls ``engine.advance`` at ``engine.next_deadline()`` (settled moves), on the board's time
(:mod:`touchmove.bridge.session`). Every ``advance`` is journaled too, and records never go back before it, so
replaying the journal rebuilds the engine exactly: after ``kill -9`` the daemon replays each board
(:mod:`touchmove.bridge.replay`) and publishes only what was not acknowledged.

Restart time: each board's engine is checkpointed at every game end, every :data:`CHECKPOINT_EVERY` entries and
at shutdown; a restart replays only the entries after the latest checkpoint.

Elsewhere in this package: journal write errors (:mod:`~touchmove.bridge.journal_faults`), board identity
conflicts (:mod:`~touchmove.bridge.identity`), MQTT commands (:mod:`~touchmove.bridge.commands`), the
``touchmove run`` command line (:mod:`~touchmove.bridge.command`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import sqlite3
import time
import uuid
from typing import Any

from touchmove import __version__, board_ids, checkpoint, records, wire
from touchmove.bridge.admission import Admission
from touchmove.bridge.commands import BridgeCommands
from touchmove.bridge.journal_faults import JournalFaults
from touchmove.bridge.journal_lock import JournalLock
from touchmove.bridge.ports import BoardPorts
from touchmove.bridge.replay import replay_entries
from touchmove.bridge.seq_floor import SeqFloor
from touchmove.bridge.session import BoardSession
from touchmove.config import BridgeConfig
from touchmove.journal import Journal, is_malformed, iso_now, open_checked, set_aside
from touchmove.mqtt_bridge import OFFLINE, MqttLink, dumps
from touchmove.rules import Engine, Event
from touchmove.serial_link import SerialLink, leds_command

log = logging.getLogger("touchmove.bridge")

#: Events kept in memory per board while the MQTT queue is full (older ones are re-read from the journal).
MAX_BACKLOG = 2000
#: A board's engine is checkpointed after this many journal entries (and at every game end).
CHECKPOINT_EVERY = 100

LED_LAST_MOVE = [0, 48, 0]
LED_CORRECT = [64, 0, 0]


class Bridge:
    """The daemon. ``await bridge.run()`` serves until cancelled or :meth:`stop`."""

    def __init__(self, config: BridgeConfig, *, session: str | None = None) -> None:
        self.config = config
        self.session = session or uuid.uuid4().hex[:12]
        self.base = config.mqtt.base_topic
        self.started = iso_now()
        # the key signing engine checkpoints (created on first use): a CheckpointKeyError stops the start
        self.checkpoint_key = checkpoint.ensure_key(checkpoint.key_path(config.checkpoint_key))
        self.journal_lock = JournalLock(config.journal)
        self.journal_lock.acquire(self.session)     # JournalLocked: another bridge serves this journal
        self.journal, self.journal_set_aside = open_checked(config.journal)
        self.seq_floor = SeqFloor(config.journal)
        self.boards: dict[str, BoardSession] = {}
        self.ports = BoardPorts(self)
        self.admission = Admission(self)
        #: board ids in the journal that break the id rule: never resumed nor published (see restore)
        self.refused_journal_ids: list[str] = []
        self.commands = BridgeCommands(self)
        self.mqtt = MqttLink(config.mqtt, on_command=self.on_command, on_acked=self._on_acked,
                             on_connected=self._on_mqtt_connected)
        self.stats: dict[str, int] = {"lines": 0, "records": 0, "malformed": 0, "out_of_range": 0, "gaps": 0,
                                      "events": 0, "time_jumps": 0, "identity_conflicts": 0,
                                      "operator_records_refused": 0}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush_scheduled = False
        self._dirty_boards: set[BoardSession] = set()
        self._pump_boards: set[BoardSession] = set()
        self._stopped = asyncio.Event()
        self.journal_faults = JournalFaults(self.journal, self.boards, checkpoint=self.checkpoint,
                                            changed=self.publish_bridge_state, loop=self._event_loop)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop or asyncio.get_running_loop()

    @property
    def journal_loss(self) -> dict[str, int]:
        """What the journal's bound made the bridge give up (records, events; see journal_faults)."""
        return self.journal_faults.loss

    async def on_command(self, topic: str, raw: bytes, retained: bool) -> None:
        """An MQTT command (a board's ``set`` or a bridge request): see :class:`BridgeCommands`."""
        await self.commands.on_command(topic, raw, retained)

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

    # -- start-up: resume from the journal ----------------------------------------------------------------
    def restore(self) -> None:
        """Rebuild every board known to the journal and queue the events not yet published; a journal SQLite
        finds damaged on the way is set aside, and the bridge goes on with a new one."""
        try:
            self._restore()
        except sqlite3.DatabaseError as exc:
            if not is_malformed(exc):
                raise
            for sess in self.boards.values():
                if sess.timer is not None:
                    sess.timer.cancel()
            self.boards.clear()
            self._pump_boards.clear()
            self.journal.db.close()
            self.journal_set_aside = set_aside(self.config.journal)
            log.error("journal %s is damaged (%s): kept as %s, a new journal is started", self.config.journal, exc,
                      self.journal_set_aside)
            self.journal = Journal(self.config.journal)
            self.journal_faults.journal = self.journal
            self._restore()

    def _restore(self) -> None:
        now = time.monotonic()
        for row in self.journal.boards():
            if not board_ids.is_board_id(row.board):
                # A journal written before the id rule may hold an id that cannot be published (a topic level
                # with a control character makes the broker drop the connection): that board is left as it is
                # in the journal (``export`` still reads it) and never resumed, so the link cannot flap.
                self.refused_journal_ids.append(row.board)
                log.error("journal: board id %s breaks the id rule (%s); not resumed, not published",
                          board_ids.shown(row.board), board_ids.id_problem(row.board))
                continue
            engine, produced, headers = replay_entries(self.journal, row.board, self.config.settle_ms,
                                                       key=self.checkpoint_key)
            journaled = self.journal.event_count(row.board)
            if produced > journaled:
                log.warning("board %s: replay gave %d events, journal has %d", row.board, produced, journaled)
            sess = BoardSession(row.board, engine, boot=row.boot, last_seq=row.last_seq,
                                t_offset=row.t_offset, last_t=row.last_t, arrival_t=row.last_t,
                                arrival_host=now,
                                event_seq=journaled, queued_seq=row.published, published=row.published,
                                published_saved=row.published, headers=headers)
            self.boards[row.board] = sess
            log.info("board %s resumed: %d events, %d published", row.board, journaled, row.published)
            offered = self.seq_floor.floor(row.board)
            if offered > journaled:
                # Published from memory while the journal could not write, then a crash: those seqs are never
                # used again (their content is gone); what the board shows is recovered from its snapshot.
                sess.event_seq, sess.lost_from, sess.lost_upto = offered, journaled + 1, offered
                log.warning("board %s: events %d..%d were published but never journaled (a crash while the "
                            "journal could not write); new events go on from %d", row.board, journaled + 1,
                            offered, offered + 1)
                self.emit_bridge_alert(sess, "events_not_journaled", {
                    "first_seq": journaled + 1, "last_seq": offered,
                    "note": "published before a crash while the journal could not write; the plies they "
                            "carried are recovered from the board's snapshot"})
        if self.refused_journal_ids or self.journal_set_aside is not None:
            self.publish_bridge_state()
        for sess in self.boards.values():
            self.publish_board_retained(sess)
            self._schedule(sess)
            if sess.queued_seq < sess.event_seq:
                self._pump_boards.add(sess)

    def new_session(self, board: str, min_settle_ms: int = 0) -> BoardSession:
        """Return the session of a board the journal does not know; its seqs go on past any it had (a journal
        set aside, see :mod:`touchmove.bridge.seq_floor`). ``min_settle_ms``: the least settle time the board's
        link needs (a scanning vendor board shows a sliding piece for a whole scan)."""
        sess = BoardSession(board, Engine(settle_ms=max(self.config.settle_ms, min_settle_ms)))
        offered = self.seq_floor.floor(board)
        sess.event_seq = sess.queued_seq = sess.published = offered
        return sess

    # -- the engine ---------------------------------------------------------------------------------------
    @staticmethod
    def board_now(sess: BoardSession) -> int:
        """Estimate the board's current device time."""
        return sess.now()

    def feed(self, sess: BoardSession, record: records.Record, source: str) -> None:
        """Journal one record for a board and run it through its engine."""
        self.stats["records"] += 1
        sess.last_t = record.t
        self.mark(sess)
        self.journal.add_entry(sess.board, "record", record.t, records.to_line(record), source, iso_now())
        sess.since_checkpoint += 1
        try:
            events = sess.engine.feed(record)
        except Exception as exc:
            log.exception("board %s: engine failed on %s", sess.board, records.to_line(record))
            events = self._rebuild_engine(sess, exc, records.to_line(record))
        self._emit(sess, events)
        self._schedule(sess)

    def _schedule(self, sess: BoardSession) -> None:
        if sess.timer is not None:
            sess.timer.cancel()
            sess.timer = None
        deadline = sess.engine.next_deadline()
        if deadline is None:
            return
        loop = self._loop or asyncio.get_running_loop()
        base_host = sess.arrival_host or time.monotonic()
        delay = (deadline - sess.arrival_t) / 1000 / sess.rate - (time.monotonic() - base_host)
        sess.timer = loop.call_later(max(0.0, delay), self._on_deadline, sess, deadline)

    def _on_deadline(self, sess: BoardSession, deadline: int) -> None:
        sess.timer = None
        # The deadline itself, not the estimated "now": an estimate that runs ahead of the device (a rate
        # learned from a burst of late lines) must not push later records back onto one frozen time.
        t = max(deadline, sess.last_t)
        sess.last_t = t
        self.mark(sess)
        self.journal.add_entry(sess.board, "advance", t, None, "timer", iso_now())
        sess.since_checkpoint += 1
        try:
            events = sess.engine.advance(t)
        except Exception as exc:
            log.exception("board %s: engine.advance(%d) failed", sess.board, t)
            events = self._rebuild_engine(sess, exc, f"advance to t={t}")
        self._emit(sess, events)
        self._schedule(sess)
        self.schedule_flush()

    def _emit(self, sess: BoardSession, events: list[Event]) -> None:
        if not events:
            return
        ts = iso_now()
        retained_changed = False
        game_ended = False
        for event in events:
            game_ended = game_ended or event.type == "game_end"
            sess.event_seq += 1
            self.stats["events"] += 1
            payload = event.to_dict()
            payload.update(board=sess.board, seq=sess.event_seq, session=self.session, ts=ts)
            self.journal.add_event(sess.board, sess.event_seq, payload)
            sess.backlog.append((sess.event_seq, dumps(payload)))
            if len(sess.backlog) > MAX_BACKLOG:
                sess.backlog.clear()   # the journal has them
            self._leds_for(sess, payload)
            retained_changed = retained_changed or event.type != "touch"
        if retained_changed:
            self.publish_board_retained(sess)
        if game_ended or sess.since_checkpoint >= CHECKPOINT_EVERY:
            self.checkpoint(sess)

    def _rebuild_engine(self, sess: BoardSession, exc: Exception, what: str) -> list[Event]:
        """After the engine raised on ``what``: replace it with one rebuilt from the board's checkpoint and
        journal (the failing entry is skipped there), never keep a half-updated engine; raise an
        ``engine_rebuilt`` alert. Return no events: what the replay gives again was published already."""
        detail: dict[str, Any] = {"error": f"{type(exc).__name__}: {exc}"[:200], "input": what[:200]}
        written = self.journal.commit()      # the replay reads the database: the held entries first
        try:
            engine, _, _ = replay_entries(self.journal, sess.board, self.config.settle_ms, key=self.checkpoint_key)
        except Exception as again:      # the journal cannot be read: a fresh engine is better than a broken one
            log.exception("board %s: the engine cannot be rebuilt from the journal", sess.board)
            engine = Engine(settle_ms=self.config.settle_ms)
            detail["rebuilt_from"] = f"nothing (journal: {type(again).__name__}); the board needs a resync"
        else:
            detail["rebuilt_from"] = "checkpoint and journal" if written else (
                "checkpoint and the journal as written (entries it could not write yet were not replayed)")
        sess.engine = engine
        log.warning("board %s: engine rebuilt from %s", sess.board, detail["rebuilt_from"])
        self.emit_bridge_alert(sess, "engine_rebuilt", detail)
        return []

    def emit_bridge_alert(self, sess: BoardSession, code: str, detail: dict[str, Any]) -> None:
        """Publish (and journal) an alert the bridge raises itself, in the board's event stream."""
        st = sess.engine.state()
        sess.event_seq += 1
        self.stats["events"] += 1
        payload = {"type": "alert", "game": st.game, "t": sess.last_t, "code": code, "ply": st.ply + 1,
                   "article": "", "detail": detail, "origin": "bridge", "board": sess.board,
                   "seq": sess.event_seq, "session": self.session, "ts": iso_now()}
        self.journal.add_event(sess.board, sess.event_seq, payload)
        sess.backlog.append((sess.event_seq, dumps(payload)))
        self.mark(sess)
        self.schedule_flush()

    def checkpoint(self, sess: BoardSession) -> None:
        """Journal the board's engine as it is now: a restart replays only what comes after."""
        try:
            state = checkpoint.dump(sess.engine)
        except Exception:
            log.exception("board %s: cannot checkpoint the engine (a restart replays more)", sess.board)
            return
        code, settle_ms = checkpoint.fingerprint(), sess.engine.settle_ms
        after, headers = self.journal.last_entry_id, dict(sess.headers)
        mac = self.checkpoint_key.sign(sess.board, code, settle_ms, sess.event_seq, state, after, headers)
        self.journal.add_checkpoint(sess.board, sess.event_seq, sess.last_t, code, state, headers,
                                    iso_now(), settle_ms=settle_ms, mac=mac, after_entry=after)
        sess.since_checkpoint = 0
        self.mark(sess)

    def _leds_for(self, sess: BoardSession, payload: dict[str, Any]) -> None:
        if sess.link is None:
            return
        kind = payload["type"]
        if kind in ("move", "move_amended") and isinstance(payload.get("uci"), str):
            uci = payload["uci"]
            sess.link.send({"cmd": "leds", "clear": True})
            sess.link.send({"cmd": "leds", "squares": [uci[:2], uci[2:4]], "color": LED_LAST_MOVE})
        elif kind == "alert" and payload.get("code") == "board_mismatch":
            detail = payload.get("detail") or {}
            squares = [s for key in ("extra", "missing") for s in detail.get(key, []) if isinstance(s, str)]
            if squares:
                sess.link.send(leds_command(squares, LED_CORRECT))
        elif kind in ("takeback", "game_start") or (
                kind == "alert" and payload.get("code") == "board_restored"):
            sess.link.send({"cmd": "leds", "clear": True})

    # -- publishing ---------------------------------------------------------------------------------------
    def topic(self, board: str, leaf: str) -> str:
        return wire.board_topic(self.base, board, leaf)

    def state_payload(self, sess: BoardSession) -> dict[str, Any]:
        st = sess.engine.state()
        return {"board": sess.board, "game": st.game, "ply": st.ply, "fen": st.fen, "last_move": st.last_move,
                "in_sync": st.in_sync, "occupancy": records.format_occupancy(st.occupancy),
                "game_over": st.game_over, "session": self.session, "ts": iso_now()}

    def pgn_text(self, sess: BoardSession, game_index: int = -1) -> str:
        games = sess.engine.games
        if not games:
            return ""
        headers = {"Event": "touchmove", "Site": sess.board, **sess.headers}
        game = games[game_index].pgn(headers)
        out = io.StringIO()
        print(game, file=out, end="\n")
        return out.getvalue()

    def publish_board_retained(self, sess: BoardSession) -> None:
        self.mqtt.retain(self.topic(sess.board, "state"), lambda: dumps(self.state_payload(sess)))
        self.mqtt.retain(self.topic(sess.board, "pgn"), lambda: self.pgn_text(sess).encode())
        if sess.link is None and self.topic(sess.board, "availability") not in self.mqtt.retained_topics():
            self.mqtt.retain(self.topic(sess.board, "availability"), OFFLINE)

    def info_payload(self) -> dict[str, Any]:
        return {"version": __version__, "session": self.session, "started": self.started,
                "settle_ms": self.config.settle_ms, "boards": sorted(self.boards)}

    def publish_info(self) -> None:
        self.mqtt.retain(wire.bridge_topic(self.base, "info"), lambda: dumps(self.info_payload()))

    def _on_mqtt_connected(self) -> None:
        self.publish_info()
        if self.problems():
            self.publish_bridge_state()

    def _on_acked(self, tag: Any) -> None:
        board, seq = tag
        sess = self.boards.get(board)
        if sess is not None and seq > sess.published:
            sess.published = seq
            self.mark(sess)
            self.schedule_flush()

    def mark(self, sess: BoardSession) -> None:
        """Note that a board has something to save or to publish at the next flush."""
        sess.dirty = True
        self._dirty_boards.add(sess)

    def schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop = self._loop or asyncio.get_running_loop()
            loop.call_soon(self.flush)

    def flush(self) -> None:
        """Commit the journal, then hand newly journaled events to MQTT (never the other way round)."""
        self._flush_scheduled = False
        dirty, self._dirty_boards = self._dirty_boards, set()
        for sess in dirty:
            if sess.dirty:
                self.journal.update_board(sess.board, boot=sess.boot, last_seq=sess.last_seq,
                                          t_offset=sess.t_offset, last_t=sess.last_t)
                sess.dirty = False
            if sess.published > sess.published_saved:
                self.journal.mark_published(sess.board, sess.published)
                sess.published_saved = sess.published
        self.journal_faults.commit()
        self._pump_boards |= {sess for sess in dirty if sess.queued_seq < sess.event_seq}
        self.pump()

    def journal_status(self) -> dict[str, Any]:
        """Return the journal's health: whether it writes, why not, and what is held or was given up."""
        return self.journal_faults.status()

    def problems(self) -> list[dict[str, Any]]:
        """Return what the operator should know about now (empty when all is well)."""
        set_aside_ = [] if self.journal_set_aside is None else [{
            "code": "journal_set_aside", "file": str(self.journal_set_aside),
            "message": f"SQLite found the journal damaged: it is kept as {self.journal_set_aside} (touchmove export "
                       "may still read part of it) and a new journal was started; event seqs go on"}]
        refused = [{"code": "journal_board_refused", "board": board_ids.shown(board),
                    "message": f"the journal holds board id {board_ids.shown(board)}, which breaks the id rule: "
                               "that board is not resumed (touchmove export still reads it)"}
                   for board in self.refused_journal_ids]
        return [*self.journal_faults.problems(), *(c.as_dict() for c in self.ports.identity_conflicts.values()),
                *self.admission.problems(), *refused, *set_aside_]

    def publish_bridge_state(self) -> None:
        problems = self.problems()
        payload: dict[str, Any] = {"state": "online"}
        if problems:
            payload["problems"] = problems
        self.mqtt.retain(wire.bridge_topic(self.base, "state"), dumps(payload))

    def pump(self) -> None:
        """Offer journaled, not yet queued events to MQTT while its queue has room."""
        for sess in list(self._pump_boards):
            while sess.queued_seq < sess.event_seq:
                room = self.mqtt.room()
                if room <= 0:
                    return
                if sess.lost_from <= sess.queued_seq + 1 <= sess.lost_upto:
                    sess.queued_seq = sess.lost_upto         # never journaled: not in the stream again
                    continue
                while sess.backlog and sess.backlog[0][0] <= sess.queued_seq:
                    sess.backlog.popleft()
                if sess.backlog and sess.backlog[0][0] == sess.queued_seq + 1:
                    batch = [sess.backlog.popleft() for _ in range(min(room, len(sess.backlog)))]
                else:
                    batch = [(seq, body.encode()) for seq, body in
                             self.journal.events(sess.board, after=sess.queued_seq, limit=room)]
                    if not batch:
                        break
                topic = self.topic(sess.board, "events")
                unwritten = self.journal.holds_events(sess.board)
                if not self.seq_floor.record(sess.board, batch[-1][0], durable=unwritten) and unwritten:
                    break           # not recordable: offered once the journal has them (a later pump)
                for seq, body in batch:
                    if seq != sess.queued_seq + 1:
                        break
                    self.mqtt.offer_event(topic, body, (sess.board, seq))
                    sess.queued_seq = seq
            if sess.queued_seq >= sess.event_seq:
                self._pump_boards.discard(sess)

    # -- running ------------------------------------------------------------------------------------------
    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.restore()
        self.journal.checkpoint_in_background()
        self.publish_info()
        self.flush()
        tasks = [asyncio.create_task(self.mqtt.run(), name="mqtt"),
                 asyncio.create_task(self.ports.scan_loop(), name="scan")]
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
        for link in list(self.ports.links.values()):
            link.close()
        for link in list(self.ports.links.values()):
            await asyncio.to_thread(link.join, 1.0)
        for sess in self.boards.values():
            if sess.timer is not None:
                sess.timer.cancel()
            if sess.since_checkpoint:
                self.checkpoint(sess)       # the next start replays nothing
        self.journal_faults.stop()
        self.flush()
        # Give the queue a moment to drain, then say goodbye.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                while self.mqtt.connected and self.mqtt.pending():
                    await asyncio.sleep(0.02)
        final = [(self.topic(b, "availability"), OFFLINE) for b in self.boards]
        final.append((wire.bridge_topic(self.base, "state"), OFFLINE))
        await self.mqtt.close(final)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.flush()
        self.journal.close()
        self.seq_floor.close()
        self.journal_lock.release()


