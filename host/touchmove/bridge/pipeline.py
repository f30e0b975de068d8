"""The bridge's event pipeline: records in, a rules engine per board, the journal, events out in order.

Data path for one batch of lines from a port (all in the event loop)::

    record -> journal the record -> engine.feed -> journal the events
    -> (after the batch) journal commit -> offer events to the outlet -> ack -> journal "published" mark

A timer per board calls ``engine.advance`` at ``engine.next_deadline()`` (settled moves), on the board's time
(:mod:`touchmove.bridge.session`). Every ``advance`` is journaled too, and records never go back before it, so
replaying the journal rebuilds the engine exactly: after ``kill -9`` the bridge replays each board
(:mod:`touchmove.bridge.replay`) and publishes only what was not acknowledged.

Restart time: each board's engine is checkpointed at every game end, every :data:`CHECKPOINT_EVERY` entries and
at shutdown; a restart replays only the entries after the latest checkpoint.

The pipeline knows nothing of MQTT: what it produces goes to an :class:`EventOutlet` (the bridge's
:class:`~touchmove.bridge.publisher.Publisher`). Nothing is opened when it is made: :meth:`EventPipeline.open`
takes the journal's lock and opens the journal, its seq floor and the checkpoint key; :meth:`close` lets go.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path
from typing import Any, Protocol

from touchmove import board_ids, records
from touchmove.bridge import checkpoint
from touchmove.bridge.journal import Journal, is_malformed, open_checked, set_aside
from touchmove.bridge.journal_faults import JournalFaults
from touchmove.bridge.journal_lock import JournalLock, JournalLocked
from touchmove.bridge.journal_watch import JOURNAL_WATCH_S, reopen
from touchmove.bridge.leds import show_on_board
from touchmove.bridge.mqtt_link import dumps
from touchmove.bridge.replay import replay_entries
from touchmove.bridge.seq_floor import SeqFloor
from touchmove.bridge.session import BoardSession
from touchmove.clocks import SYSTEM_CLOCK, Clock
from touchmove.config import BridgeConfig
from touchmove.mqtt.wire import iso_now
from touchmove.rules import Engine, Event

log = logging.getLogger("touchmove.bridge")

#: Events kept in memory per board while the MQTT queue is full (older ones are re-read from the journal).
MAX_BACKLOG = 2000
#: A board's engine is checkpointed after this many journal entries (and at every game end).
CHECKPOINT_EVERY = 100


class EventOutlet(Protocol):
    """Where the pipeline's output goes (the publisher): events offered in order while there is room, a board's
    retained state and the bridge's state published again when they change."""

    def room(self) -> int: ...
    def offer_event(self, board: str, seq: int, body: bytes) -> None: ...
    def board_changed(self, sess: BoardSession) -> None: ...
    def bridge_state_changed(self) -> None: ...


class NotOpen(RuntimeError):
    """The pipeline was used before :meth:`EventPipeline.open` (or after :meth:`EventPipeline.close`)."""


class EventPipeline:
    """Records to each board's engine, everything to the journal, events on to an :class:`EventOutlet`."""

    def __init__(self, config: BridgeConfig, session: str, outlet: EventOutlet,
                 boards: dict[str, BoardSession] | None = None, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.session = session
        self.outlet = outlet
        self.boards: dict[str, BoardSession] = {} if boards is None else boards
        self.stats: dict[str, int] = {"lines": 0, "records": 0, "malformed": 0, "out_of_range": 0, "gaps": 0,
                                      "events": 0, "time_jumps": 0, "identity_conflicts": 0,
                                      "operator_records_refused": 0, "check_failed": 0}
        #: board ids in the journal that break the id rule: never resumed nor published (see restore)
        self.refused_journal_ids: list[str] = []
        #: where a journal SQLite found damaged went (None: it was sound)
        self.journal_set_aside: Path | None = None
        #: the journal's file lost while the bridge ran (deleted, moved, replaced): the problem said about it
        self.journal_replaced: dict[str, Any] | None = None
        self.journal_lock = JournalLock(config.journal)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._journal: Journal | None = None
        self._seq_floor: SeqFloor | None = None
        self._key: checkpoint.CheckpointKey | None = None
        self._faults: JournalFaults | None = None
        self._closed = False
        self._flush_scheduled = False
        self._dirty_boards: set[BoardSession] = set()
        self._pump_boards: set[BoardSession] = set()

    # -- opening and closing ------------------------------------------------------------------------------
    @property
    def opened(self) -> bool:
        return self._journal is not None

    def open(self) -> None:
        """Take the journal's lock and open the journal, its seq floor and the checkpoint key. Raise
        ``JournalLocked`` (another bridge serves this journal) or ``CheckpointKeyError`` (no key can be made)."""
        if self._journal is not None:
            return
        self._closed = False
        key = checkpoint.ensure_key(checkpoint.key_path(self.config.checkpoint_key))
        self.journal_lock.acquire(self.session)
        try:
            journal, self.journal_set_aside = open_checked(self.config.journal)
        except BaseException:
            self.journal_lock.release()
            raise
        self._key, self._journal = key, journal
        self._seq_floor = SeqFloor(self.config.journal)
        self._seq_floor.open()
        self._faults = JournalFaults(journal, self.boards, checkpoint=self.checkpoint,
                                     changed=self.outlet.bridge_state_changed, loop=self.event_loop)

    def close(self) -> None:
        """Close the journal and the seq floor, release the journal's lock (once: a second call does nothing)."""
        if self._closed:
            return
        if self._journal is not None:
            self._closed = True
            self._journal.close()
        if self._seq_floor is not None:
            self._seq_floor.close()
        self.journal_lock.release()

    @property
    def journal(self) -> Journal:
        if self._journal is None:
            raise NotOpen("the bridge's journal is not open (open() or run() first)")
        return self._journal

    @property
    def seq_floor(self) -> SeqFloor:
        if self._seq_floor is None:
            raise NotOpen("the bridge's seq floor is not open (open() or run() first)")
        return self._seq_floor

    @property
    def checkpoint_key(self) -> checkpoint.CheckpointKey:
        if self._key is None:
            raise NotOpen("the checkpoint key is not read yet (open() or run() first)")
        return self._key

    @property
    def journal_faults(self) -> JournalFaults:
        if self._faults is None:
            raise NotOpen("the bridge's journal is not open (open() or run() first)")
        return self._faults

    def event_loop(self) -> asyncio.AbstractEventLoop:
        return self.loop or asyncio.get_running_loop()

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
            self._journal = Journal.open(self.config.journal)
            self.journal_faults.journal = self._journal
            self._restore()

    def _restore(self) -> None:
        now = self.clock.monotonic()
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
            self._journal_settle(sess)
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
            self.outlet.bridge_state_changed()
        for sess in self.boards.values():
            self.outlet.board_changed(sess)
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

    def bind(self, board: str, min_settle_ms: int = 0) -> BoardSession:
        """Return the session of ``board``, made (and journaled) when the bridge did not know it."""
        sess = self.boards.get(board)
        if sess is None:
            sess = self.boards[board] = self.new_session(board, min_settle_ms)
            self.journal.ensure_board(board)
            self._journal_settle(sess)
        return sess

    def _journal_settle(self, sess: BoardSession) -> None:
        """Journal the settle time ``sess``'s engine runs with when the journal does not say it already: an export
        replays the entries with it (a checkpoint says it too, but the first is written after many events)."""
        if self.journal.settle_ms(sess.board) != sess.engine.settle_ms:
            self.journal.add_entry(sess.board, "settle", sess.last_t, str(sess.engine.settle_ms), "bridge", iso_now())

    # -- the engine ---------------------------------------------------------------------------------------
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
        now = self.clock.monotonic()
        base_host = sess.arrival_host or now
        delay = (deadline - sess.arrival_t) / 1000 / sess.rate - (now - base_host)
        sess.timer = self.event_loop().call_later(max(0.0, delay), self._on_deadline, sess, deadline)

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
            if sess.link is not None:
                show_on_board(sess.link, payload)
            retained_changed = retained_changed or event.type != "touch"
        if retained_changed:
            self.outlet.board_changed(sess)
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

    async def watch_journal(self) -> None:
        """Look at the journal's file every :data:`~touchmove.bridge.journal_watch.JOURNAL_WATCH_S`; start a new
        one when it was deleted, moved or replaced (:mod:`touchmove.bridge.journal_watch`)."""
        while True:
            await asyncio.sleep(JOURNAL_WATCH_S)
            if self._closed or self._journal is None:
                continue
            try:
                why = self._journal.file_lost()
                if why is not None:
                    self.journal_lost(why)
                else:
                    self.keep_side_files()
            except Exception:
                log.exception("journal: the watch on its file failed")

    def keep_side_files(self) -> None:
        """Make the journal's ``.lock`` and ``-seqs`` files again when they left their paths (deleted with the
        journal, say): the lock keeps a second bridge off this journal, the seq floors keep a crash from
        reusing seqs (:mod:`touchmove.bridge.journal_lock`, :mod:`touchmove.bridge.seq_floor`)."""
        try:
            if self.journal_lock.take_again():
                log.error("journal: its lock file %s had left its path (deleted or replaced): a new one is locked",
                          self.journal_lock.path)
        except JournalLocked as exc:
            log.error("journal: its lock file %s had left its path and another bridge locked a new one: %s",
                      self.journal_lock.path, exc)
        except OSError as exc:      # the old file stays locked: the journal's own work goes on
            log.error("journal: its lock file %s had left its path and cannot be made again (%s)",
                      self.journal_lock.path, exc)
        if self._seq_floor is not None and self._seq_floor.make_again():
            log.error("journal: its seq floor file %s had left its path (deleted or replaced): made again",
                      self._seq_floor.path)

    def journal_lost(self, why: str) -> None:
        """The journal's file was deleted, moved or replaced (``why``): start a new one from the lost one and the
        engines' state; say so (an error line, an alert on each board, a problem on ``bridge/state``)."""
        path = self.journal.path
        journal, kept, copied = reopen(self.journal, why)
        self._journal = journal
        self.keep_side_files()
        self.journal_faults.journal = journal
        journal.checkpoint_in_background()
        held = "a copy of the lost one" if copied else "empty (the lost one could not be copied)"
        message = (f"the journal {path} was {why} while the bridge ran: a new journal is started there, "
                   f"{held}, with every board's engine checkpointed"
                   + (f"; the file found there is kept as {kept}" if kept is not None else ""))
        log.error("%s", message)
        self.journal_replaced = {"code": "journal_replaced", "why": why, "copied": copied, "since": iso_now(),
                                 "kept": None if kept is None else str(kept), "message": message}
        for sess in self.boards.values():
            journal.ensure_board(sess.board)
            journal.update_board(sess.board, boot=sess.boot, last_seq=sess.last_seq, t_offset=sess.t_offset,
                                 last_t=sess.last_t, published=sess.published)
            self.checkpoint(sess)
            self.emit_bridge_alert(sess, "journal_replaced", {"why": why, "copied": copied, "message": message})
        self.outlet.bridge_state_changed()
        self.flush()

    def checkpoint_all(self) -> None:
        """Stop every board's timer and checkpoint the boards fed since their last checkpoint (at shutdown: the
        next start replays nothing)."""
        for sess in self.boards.values():
            if sess.timer is not None:
                sess.timer.cancel()
            if sess.since_checkpoint:
                self.checkpoint(sess)

    # -- journal, then outlet -----------------------------------------------------------------------------
    def acked(self, board: str, seq: int) -> None:
        """The outlet delivered ``board``'s events up to ``seq``: journaled as published at the next flush."""
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
            self.event_loop().call_soon(self.flush)

    def flush(self) -> None:
        """Commit the journal, then hand newly journaled events to the outlet (never the other way round)."""
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

    def pump(self) -> None:
        """Offer journaled, not yet queued events to the outlet while it has room."""
        for sess in list(self._pump_boards):
            while sess.queued_seq < sess.event_seq:
                room = self.outlet.room()
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
                unwritten = self.journal.holds_events(sess.board)
                if not self.seq_floor.record(sess.board, batch[-1][0], durable=unwritten) and unwritten:
                    break           # not recordable: offered once the journal has them (a later pump)
                for seq, body in batch:
                    if seq != sess.queued_seq + 1:
                        break
                    self.outlet.offer_event(sess.board, seq, body)
                    sess.queued_seq = seq
            if sess.queued_seq >= sess.event_seq:
                self._pump_boards.discard(sess)

    def journal_status(self) -> dict[str, Any]:
        """Return the journal's health: whether it writes, why not, and what is held or was given up."""
        return self.journal_faults.status()

    def resume_problems(self) -> list[dict[str, Any]]:
        """Return what the journal's resumption found for the operator: refused board ids, a file set aside."""
        replaced = [] if self.journal_replaced is None else [self.journal_replaced]
        set_aside_ = [] if self.journal_set_aside is None else [{
            "code": "journal_set_aside", "file": str(self.journal_set_aside),
            "message": f"SQLite found the journal damaged: it is kept as {self.journal_set_aside} (touchmove export "
                       "may still read part of it) and a new journal was started; event seqs go on"}]
        refused = [{"code": "journal_board_refused", "board": board_ids.shown(board),
                    "message": f"the journal holds board id {board_ids.shown(board)}, which breaks the id rule: "
                               "that board is not resumed (touchmove export still reads it)"}
                   for board in self.refused_journal_ids]
        return [*refused, *set_aside_, *replaced]
