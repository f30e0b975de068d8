"""``touchmove run``: serial boards in, rules engine per board, journal, MQTT out.

One :class:`BoardSession` per board id (from the board's ``hello``), each with its own rules engine. Data
path for one batch of lines from a port (all in the event loop):

    decode -> seq check -> board time -> journal the record -> engine.feed -> journal the events
    -> (after the batch) journal commit -> offer events to MQTT -> ack -> journal "published" mark

Device time: the engine has no wall clock. A board's time is the device's ``t`` plus an offset that keeps it
monotonic across reboots; between records it is estimated as the last record's time plus the host time
elapsed since it arrived, and a timer calls ``engine.advance`` at ``engine.next_deadline()`` (settled moves).
Every ``advance`` is journaled too, and records never go back before it, so replaying the journal rebuilds the
engine exactly: after ``kill -9`` the daemon replays each board and publishes only what was not acknowledged.
A device clock that jumps within one boot (backwards, or implausibly far forwards) is logged and the board's
time goes on from the host's estimate instead.

Journal faults: when a commit fails (disk full, I/O error, a lock), publishing goes on from memory, the fault is
reported on ``<base>/bridge/state`` and by ``health_check``, and the held writes are retried every
:data:`JOURNAL_RETRY_S`. At most :data:`MAX_HELD_WRITES` are held: beyond that the raw records are given up
first (each board's engine is checkpointed instead, so games, PGN and events stay complete; the ``export``
recording gets a gap), then events already handed to MQTT, then the oldest unpublished events.

Restart time: each board's engine is checkpointed at every game end, every :data:`CHECKPOINT_EVERY` entries and
at shutdown; a restart replays only the entries after the latest checkpoint.

Board identity: a port keeps the board id of its first ``hello``. A later ``hello`` with another id on that port,
or a second port saying the id of a board that is online elsewhere, raises a ``board_identity`` alert and
changes no binding (the second port is held back until the first one closes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import os
import sys
import time
import uuid
from collections import deque
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chess
import chess.pgn

from touchmove import __version__, checkpoint, records
from touchmove.config import BridgeConfig, ConfigError, load
from touchmove.journal import Journal
from touchmove.mqtt_bridge import OFFLINE, ONLINE, MqttLink, dumps
from touchmove.mqtt_schema import (
    BOARD_COMMANDS,
    BRIDGE_REQUESTS,
    decode_payload,
    transaction_of,
    validate,
)
from touchmove.rules import Engine, Event
from touchmove.rules.engine import DEFAULT_SETTLE_MS
from touchmove.serial_link import DecodeError, Message, SerialLink, decode, find_ports, leds_command
from touchmove.stop_signals import StopSignals

log = logging.getLogger(__name__)

#: Lines kept from a port before its board has said hello.
MAX_PENDING = 4000
#: Events kept in memory per board while the MQTT queue is full (older ones are re-read from the journal).
MAX_BACKLOG = 2000
#: Minimum seconds between two snapshot requests to one board.
SNAPSHOT_INTERVAL = 0.5
#: Journal writes held in memory at most while the journal cannot write (about 300 bytes each).
MAX_HELD_WRITES = 500_000
#: Seconds between two attempts to write held journal writes.
JOURNAL_RETRY_S = 1.0
#: A board's engine is checkpointed after this many journal entries (and at every game end).
CHECKPOINT_EVERY = 100
#: The longest settle time a journal's checkpoint row is believed (the configuration's bound too).
MAX_SETTLE_MS = 5000
#: A device clock running ahead of the host's estimate by more than this (ms) within a boot is a jump.
MAX_FORWARD_JUMP_MS = 3_600_000

LED_LAST_MOVE = [0, 48, 0]
LED_CORRECT = [64, 0, 0]


def iso_now() -> str:
    """Return the UTC time as ISO-8601 with milliseconds and a Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(eq=False)
class BoardSession:
    board: str
    engine: Engine
    boot: str | None = None
    last_seq: int | None = None
    t_offset: int = 0
    last_t: int = 0                      # the latest board time fed to the engine (record or advance)
    arrival_t: int = 0                   # board time of the latest record ...
    arrival_host: float = 0.0            # ... and the host's monotonic time when it arrived
    rate: float = 1.0                    # device ms per host ms (1 on real boards; N on a sped-up simulation)
    rate_anchor: tuple[int, float] | None = None
    rate_candidate: float = 1.0
    device_t: int | None = None          # the latest device time of this boot (None: not seen since start)
    since_checkpoint: int = 0            # journal entries since the last checkpoint
    event_seq: int = 0                   # events produced (and journaled)
    queued_seq: int = 0                  # events handed to MQTT
    published: int = 0                   # events acknowledged by the broker
    published_saved: int = 0
    backlog: deque[tuple[int, bytes]] = field(default_factory=deque)
    headers: dict[str, str] = field(default_factory=dict)
    link: SerialLink | None = None
    timer: asyncio.TimerHandle | None = None
    last_snapshot_request: float = 0.0
    dirty: bool = False                  # board row needs saving


@dataclass
class IdentityConflict:
    """A ``hello`` that contradicts a binding: the port ``port`` said ``claimed`` although it serves ``bound``
    (the board's id changed), or although port ``held_by`` serves that id (two boards with one id)."""

    port: str
    claimed: str
    bound: str | None
    held_by: str | None
    since: str

    def message(self) -> str:
        """Return what happened and what the operator does, in one sentence each."""
        if self.bound is not None:
            return (f"port {self.port} serves board {self.bound} but its board now says it is {self.claimed!r}; "
                    f"the port stays with {self.bound}. If another board is on that port, unplug it and plug it "
                    f"in again (the port then takes the id it says); else correct the board's id.")
        return (f"port {self.port} says board {self.claimed!r}, which port {self.held_by} already serves; "
                f"{self.port} is held back (its lines are kept). Give one of the boards another id and plug it "
                f"in again; or, if the board moved, unplug {self.held_by}: {self.port} then takes over.")

    def as_dict(self) -> dict[str, Any]:
        return {"code": "board_identity", "port": self.port, "claimed": self.claimed, "bound": self.bound,
                "held_by": self.held_by, "since": self.since, "message": self.message()}


def replay_entries(journal: Journal, board: str, settle_ms: int | None, *, use_checkpoint: bool = True,
                   key: checkpoint.CheckpointKey | None = None) -> tuple[Engine, int, dict[str, str]]:
    """Rebuild a board's engine from its journal; return it, the number of events it has given, and PGN headers.

    ``settle_ms`` None takes the settle time the bridge ran with (the checkpoint's column, else the default).
    The latest checkpoint is used when ``key`` verifies it (see :mod:`touchmove.checkpoint`), this code wrote
    it and its settle time is the one wanted; else it is ignored with one log line and every entry replayed.
    """
    cp = journal.checkpoint(board) if use_checkpoint else None
    if settle_ms is None:
        settle_ms = DEFAULT_SETTLE_MS
        if cp is not None and cp.settle_ms is not None:
            if 0 <= cp.settle_ms <= MAX_SETTLE_MS:
                settle_ms = cp.settle_ms
            else:
                log.warning("board %s: the journal's settle time %r is out of range; replaying with %d ms", board,
                            cp.settle_ms, settle_ms)
    engine = Engine(settle_ms=settle_ms)
    count = 0
    headers: dict[str, str] = {}
    after = 0
    if cp is not None:
        if cp.settle_ms != settle_ms:
            log.info("board %s: checkpoint made with another settle time; replaying the whole journal", board)
        else:
            try:
                engine = checkpoint.load(key, board, cp.code, settle_ms, cp.event_seq, cp.state, cp.mac)
                count, headers, after = cp.event_seq, dict(cp.headers), cp.after_entry
            except checkpoint.CheckpointRejected as exc:
                log.warning("board %s: checkpoint ignored: %s; replaying the whole journal", board, exc)
    for entry in journal.entries(board, after=after):
        try:
            if entry.kind == "record" and entry.body:
                count += len(engine.feed(records.parse_line(entry.body)))
            elif entry.kind == "advance":
                count += len(engine.advance(entry.t))
            elif entry.kind == "meta" and entry.body:
                headers.update(json.loads(entry.body))
        except Exception:
            log.debug("replaying %s: entry failed", board, exc_info=True)
    return engine, count, headers


class Bridge:
    """The daemon. ``await bridge.run()`` serves until cancelled or :meth:`stop`."""

    def __init__(self, config: BridgeConfig, *, session: str | None = None) -> None:
        self.config = config
        self.session = session or uuid.uuid4().hex[:12]
        self.base = config.mqtt.base_topic
        self.started = iso_now()
        # the key signing engine checkpoints (created on first use): a CheckpointKeyError stops the start
        self.checkpoint_key = checkpoint.ensure_key(checkpoint.key_path(config.checkpoint_key))
        self.journal = Journal(config.journal)
        self.boards: dict[str, BoardSession] = {}
        self.links: dict[str, SerialLink] = {}          # by real path
        self.link_paths: dict[str, SerialLink] = {}     # by the name it was found as
        self.pending_lines: dict[SerialLink, list[bytes | None]] = {}
        self.mqtt = MqttLink(config.mqtt, on_command=self.on_command, on_acked=self._on_acked,
                             on_connected=self._on_mqtt_connected)
        self.stats: dict[str, int] = {"lines": 0, "records": 0, "malformed": 0, "out_of_range": 0, "gaps": 0,
                                      "events": 0, "time_jumps": 0, "identity_conflicts": 0}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush_scheduled = False
        self._dirty_boards: set[BoardSession] = set()
        self._pump_boards: set[BoardSession] = set()
        self._stopped = asyncio.Event()
        self._journal_retry: asyncio.TimerHandle | None = None
        self.journal_loss: dict[str, int] = {"records_not_journaled": 0, "events_not_journaled": 0,
                                           "events_lost": 0}
        self.identity_conflicts: dict[tuple[str, str], IdentityConflict] = {}

    # -- start-up: resume from the journal ----------------------------------------------------------------
    def restore(self) -> None:
        """Rebuild every board known to the journal and queue the events not yet published."""
        now = time.monotonic()
        for row in self.journal.boards():
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
        for sess in self.boards.values():
            self._publish_board_retained(sess)
            self._schedule(sess)
            if sess.queued_seq < sess.event_seq:
                self._pump_boards.add(sess)

    # -- the serial side ----------------------------------------------------------------------------------
    def _lines_from_thread(self, link: SerialLink, lines: list[bytes | None]) -> None:
        assert self._loop is not None
        if not link.threaded:
            self.handle_lines(link, lines)
            return
        with contextlib.suppress(RuntimeError):   # loop closed during shutdown
            self._loop.call_soon_threadsafe(self.handle_lines, link, lines)

    def _closed_from_thread(self, link: SerialLink, reason: str) -> None:
        assert self._loop is not None
        if not link.threaded:
            self._loop.call_soon(self.handle_closed, link, reason)
            return
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self.handle_closed, link, reason)

    def open_port(self, path: str) -> SerialLink | None:
        if path in self.link_paths:
            return None       # already open under this name (checked without a system call: scans are frequent)
        real = os.path.realpath(path)
        if real in self.links:
            return None
        link = SerialLink(path, self.config.serial.baudrate, self._lines_from_thread,
                          self._closed_from_thread)
        try:
            link.open(self._loop)
        except Exception as exc:
            log.debug("cannot open %s: %s", path, exc)
            return None
        link.key = real
        self.links[real] = link
        self.link_paths[path] = link
        self.pending_lines[link] = []
        log.info("port %s opened", path)
        link.send({"cmd": "hello"})
        return link

    async def scan_loop(self) -> None:
        cfg = self.config.serial
        while True:
            try:
                for path in find_ports(cfg.ports, cfg.usb):
                    self.open_port(path)
                for link in list(self.links.values()):
                    if link.board is None and link.held_back is None:
                        link.send({"cmd": "hello"})
            except Exception:
                log.exception("port scan failed")
            await asyncio.sleep(cfg.rescan_s)

    def handle_closed(self, link: SerialLink, reason: str) -> None:
        if self.links.get(link.key) is link:
            del self.links[link.key]
        if self.link_paths.get(link.path) is link:
            del self.link_paths[link.path]
        self.pending_lines.pop(link, None)
        log.info("port %s closed (%s)", link.path, reason)
        if any(key[0] == link.path for key in self.identity_conflicts):
            self.identity_conflicts = {k: v for k, v in self.identity_conflicts.items() if k[0] != link.path}
            self._publish_bridge_state()
        sess = self.boards.get(link.board) if link.board else None
        if sess is not None and sess.link is link:
            sess.link = None
            self.mqtt.retain(self._topic(sess.board, "availability"), OFFLINE)
            self._publish_info()
            for other in [*self.pending_lines]:      # a port held back for this id takes over now
                if other.held_back == sess.board:
                    log.info("board %s: port %s, held back, is asked to say hello again", sess.board, other.path)
                    other.send({"cmd": "hello"})

    def _identity_conflict(self, link: SerialLink, claimed: str, sess: BoardSession) -> None:
        """Raise ``board_identity`` (once per port and id): ``link`` says ``claimed``, which the binding of
        ``sess`` (the port's own board, or the board that holds the id on another port) contradicts."""
        key = (link.path, claimed)
        if key in self.identity_conflicts:
            return
        self.stats["identity_conflicts"] += 1
        if link.board is not None:
            conflict = IdentityConflict(link.path, claimed, bound=link.board, held_by=None, since=iso_now())
        else:
            holder = sess.link.path if sess.link is not None else None
            conflict = IdentityConflict(link.path, claimed, bound=None, held_by=holder, since=iso_now())
        self.identity_conflicts[key] = conflict
        log.error("board identity: %s", conflict.message())
        self.emit_bridge_alert(sess, "board_identity", conflict.as_dict())
        self._publish_bridge_state()

    def handle_lines(self, link: SerialLink, lines: list[bytes | None]) -> None:
        """Process lines from one port (event loop)."""
        for line in lines:
            self.stats["lines"] += 1
            try:
                msg = decode(line)
            except DecodeError as exc:
                self.stats["malformed"] += 1
                if exc.out_of_range:
                    # Well-formed but implausible: skipped and nothing else (the seq it used, if any, shows up
                    # as a gap at the next line, which asks for a snapshot).
                    self.stats["out_of_range"] += 1
                    log.error("%s: line with an out-of-range number skipped (%s): %.120r", link.board or link.path,
                              exc, line)
                    continue
                log.warning("%s: malformed line skipped (%s): %.80r", link.board or link.path, exc, line)
                if link.board is not None:
                    self.request_snapshot(self.boards[link.board])
                continue
            if msg.kind == "hello":
                self._identify(link, msg)
            elif link.board is None:
                pending = self.pending_lines.get(link)
                if pending is not None and len(pending) < MAX_PENDING:
                    pending.append(line)
            else:
                self._handle_message(self.boards[link.board], msg)
        self._schedule_flush()

    def _identify(self, link: SerialLink, hello: Message) -> None:
        board = str(hello.fields["board"])
        boot = str(hello.fields.get("boot", ""))
        if link.board is not None and board != link.board:
            # The port's board now says another id: the port keeps its first one (the game goes on there).
            self._identity_conflict(link, board, self.boards[link.board])
            board = link.board
        sess = self.boards.get(board)
        if sess is not None and sess.link is not None and sess.link is not link:
            # Another port that is still open serves this id: hold this one back (its lines wait) until that
            # one closes, instead of moving the board back and forth between the two.
            self._identity_conflict(link, board, sess)
            link.held_back = board
            return
        link.held_back = None
        if sess is None:
            sess = BoardSession(board, Engine(settle_ms=self.config.settle_ms))
            self.boards[board] = sess
            self.journal.ensure_board(board)
        first_contact = link.board is None
        link.board = board
        sess.link = link
        pending = self.pending_lines.pop(link, []) if first_contact else []
        self.pending_lines.pop(link, None)
        # The lines buffered before the hello came from the same boot as this hello (a reboot says hello).
        msgs: list[Message] = []
        for line in pending:
            with contextlib.suppress(DecodeError):
                msgs.append(decode(line))
        if boot != sess.boot:
            first_t = msgs[0].t if msgs else hello.t
            if sess.boot is None and sess.last_t == 0:
                sess.t_offset = 0          # first contact: board time is device time
            else:
                elapsed = int((time.monotonic() - sess.arrival_host) * 1000) if sess.arrival_host else 0
                sess.t_offset = sess.last_t + max(0, elapsed) - first_t
            log.info("board %s: boot %s on %s", board, boot, link.path)
            sess.boot = boot
            sess.last_seq = None
            sess.device_t = None
            self._mark(sess)
        else:
            log.info("board %s: back on %s (same boot)", board, link.path)
        for msg in msgs:
            if sess.last_seq is not None and msg.seq is not None and msg.seq <= sess.last_seq:
                continue    # already journaled before a daemon restart
            self._handle_message(sess, msg)
        self._check_seq(sess, hello)
        self.mqtt.retain(self._topic(board, "availability"), ONLINE)
        self._publish_board_retained(sess)
        self._publish_info()
        self.request_snapshot(sess, force=True)

    def _check_seq(self, sess: BoardSession, msg: Message) -> None:
        if msg.seq is None:
            return
        if sess.last_seq is not None and msg.seq != sess.last_seq + 1 and msg.seq > sess.last_seq:
            self.stats["gaps"] += 1
            log.warning("board %s: seq gap (%d after %d); requesting a snapshot", sess.board, msg.seq,
                        sess.last_seq)
            self.request_snapshot(sess)
        sess.last_seq = msg.seq
        self._mark(sess)

    def request_snapshot(self, sess: BoardSession, *, force: bool = False) -> None:
        now = time.monotonic()
        if sess.link is None or (not force and now - sess.last_snapshot_request < SNAPSHOT_INTERVAL):
            return
        sess.last_snapshot_request = now
        sess.link.send({"cmd": "snapshot"})

    def _handle_message(self, sess: BoardSession, msg: Message) -> None:
        self._check_seq(sess, msg)
        if msg.record is None:
            if msg.kind == "error":
                log.warning("board %s reports an error: %s", sess.board, msg.fields.get("why"))
            return
        now = time.monotonic()
        board_t = self._board_time(sess, msg.t, now)
        self._learn_rate(sess, msg.t + sess.t_offset, now)
        sess.arrival_t = board_t
        sess.arrival_host = now
        record = msg.record
        if (isinstance(record, records.Snapshot) and record.type == "heartbeat"
                and sess.engine.next_deadline() is None and sess.engine.state().occupancy == record.occ):
            return   # a heartbeat that tells the engine nothing new: not fed, not journaled (a small journal)
        self.feed(sess, replace(record, t=board_t), "serial")

    def _board_time(self, sess: BoardSession, device_t: int, now: float) -> int:
        """Return the board time of a record stamped ``device_t`` by the board's current boot.

        Device time never runs backwards within a boot, and never runs ahead of the host's clock by more than
        :data:`MAX_FORWARD_JUMP_MS`: a clock that does either (a firmware fault, a clock set while running)
        is logged, and the board's time goes on from the host's estimate (board time stays monotonic). A line
        stamped before the board time a settle timer already reached (it arrived late) moves the offset on
        by the overlap, so the lines keep their spacing.
        """
        last = sess.device_t
        jump = None
        if last is not None and device_t < last:
            jump = f"ran backwards by {last - device_t} ms"
        elif last is not None and sess.arrival_host:
            expected = (now - sess.arrival_host) * 1000 * max(sess.rate, 1.0)
            if device_t - last > expected + MAX_FORWARD_JUMP_MS:
                jump = f"jumped {device_t - last} ms ahead in {expected / 1000:.1f} s"
        sess.device_t = device_t
        if jump is not None:
            self.stats["time_jumps"] += 1
            estimate = self.board_now(sess)
            log.warning("board %s: device time %s within boot %s; board time goes on from %d (the host's "
                        "estimate)", sess.board, jump, sess.boot, estimate)
            sess.t_offset = estimate - device_t
            sess.rate_anchor = None
            self._mark(sess)
        board_t = device_t + sess.t_offset
        if board_t < sess.last_t:
            # Stamped before a timer's advance but arriving after it (a late line): shift this boot's offset
            # rather than pile it and the lines behind it onto one time, which would read as chatter.
            sess.t_offset += sess.last_t - board_t
            board_t = sess.last_t
            self._mark(sess)
        return board_t

    @staticmethod
    def _learn_rate(sess: BoardSession, device_t: int, now: float) -> None:
        """Estimate how fast the board's clock runs against the host's, over windows of 2 s or more."""
        anchor = sess.rate_anchor
        if anchor is None or device_t < anchor[0]:
            sess.rate_anchor = (device_t, now)
            return
        host_ms = (now - anchor[1]) * 1000
        if host_ms >= 2000:
            # Lines that waited in a buffer make one window look fast: adopt a rate only when two windows in
            # a row agree, and treat anything near real time as real time (real boards).
            measured = (device_t - anchor[0]) / host_ms
            if abs(measured - sess.rate_candidate) <= 0.1 * sess.rate_candidate:
                sess.rate = min(1000.0, measured) if measured >= 1.5 else 1.0
            sess.rate_candidate = max(0.01, measured)
            sess.rate_anchor = (device_t, now)

    # -- the engine ---------------------------------------------------------------------------------------
    def board_now(self, sess: BoardSession) -> int:
        """Estimate the board's current device time."""
        if not sess.arrival_host:
            return sess.last_t
        est = sess.arrival_t + int((time.monotonic() - sess.arrival_host) * 1000 * sess.rate)
        return max(est, sess.last_t)

    def feed(self, sess: BoardSession, record: records.Record, source: str) -> None:
        """Journal one record for a board and run it through its engine."""
        self.stats["records"] += 1
        sess.last_t = record.t
        self._mark(sess)
        self.journal.add_entry(sess.board, "record", record.t, records.to_line(record), source, iso_now())
        sess.since_checkpoint += 1
        try:
            events = sess.engine.feed(record)
        except Exception:
            log.exception("board %s: engine failed on %s", sess.board, records.to_line(record))
            events = []
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
        self._mark(sess)
        self.journal.add_entry(sess.board, "advance", t, None, "timer", iso_now())
        sess.since_checkpoint += 1
        try:
            events = sess.engine.advance(t)
        except Exception:
            log.exception("board %s: engine.advance(%d) failed", sess.board, t)
            events = []
        self._emit(sess, events)
        self._schedule(sess)
        self._schedule_flush()

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
            self._publish_board_retained(sess)
        if game_ended or sess.since_checkpoint >= CHECKPOINT_EVERY:
            self.checkpoint(sess)

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
        self._mark(sess)
        self._schedule_flush()

    def checkpoint(self, sess: BoardSession) -> None:
        """Journal the board's engine as it is now: a restart replays only what comes after."""
        try:
            state = checkpoint.dump(sess.engine)
        except Exception:
            log.exception("board %s: cannot checkpoint the engine (a restart replays more)", sess.board)
            return
        code, settle_ms = checkpoint.fingerprint(), sess.engine.settle_ms
        mac = self.checkpoint_key.sign(sess.board, code, settle_ms, sess.event_seq, state)
        self.journal.add_checkpoint(sess.board, sess.event_seq, sess.last_t, code, state, dict(sess.headers),
                                    iso_now(), settle_ms=settle_ms, mac=mac)
        sess.since_checkpoint = 0
        self._mark(sess)

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
    def _topic(self, board: str, leaf: str) -> str:
        return f"{self.base}/boards/{board}/{leaf}"

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

    def _publish_board_retained(self, sess: BoardSession) -> None:
        self.mqtt.retain(self._topic(sess.board, "state"), lambda: dumps(self.state_payload(sess)))
        self.mqtt.retain(self._topic(sess.board, "pgn"), lambda: self.pgn_text(sess).encode())
        if sess.link is None and self._topic(sess.board, "availability") not in self.mqtt._retained:
            self.mqtt.retain(self._topic(sess.board, "availability"), OFFLINE)

    def info_payload(self) -> dict[str, Any]:
        return {"version": __version__, "session": self.session, "started": self.started,
                "settle_ms": self.config.settle_ms, "boards": sorted(self.boards)}

    def _publish_info(self) -> None:
        self.mqtt.retain(f"{self.base}/bridge/info", lambda: dumps(self.info_payload()))

    def _on_mqtt_connected(self) -> None:
        self._publish_info()
        if self.problems():
            self._publish_bridge_state()

    def _on_acked(self, tag: Any) -> None:
        board, seq = tag
        sess = self.boards.get(board)
        if sess is not None and seq > sess.published:
            sess.published = seq
            self._mark(sess)
            self._schedule_flush()

    def _mark(self, sess: BoardSession) -> None:
        """Note that a board has something to save or to publish at the next flush."""
        sess.dirty = True
        self._dirty_boards.add(sess)

    def _schedule_flush(self) -> None:
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
        if self._journal_retry is None and not self.journal.commit():
            self._journal_failed()
        if self.journal.held > MAX_HELD_WRITES:
            self._limit_held()
        self._pump_boards |= {sess for sess in dirty if sess.queued_seq < sess.event_seq}
        self.pump()

    # -- journal faults -----------------------------------------------------------------------------------
    def _journal_failed(self) -> None:
        """The journal cannot write: say so, go on publishing from memory, and try again later."""
        loop = self._loop or asyncio.get_running_loop()
        self._journal_retry = loop.call_later(JOURNAL_RETRY_S, self._retry_journal)
        self._publish_bridge_state()

    def _retry_journal(self) -> None:
        self._journal_retry = None
        loop = self._loop or asyncio.get_running_loop()
        if self.journal.commit(max_chunks=16):
            log.info("journal: every held write is written")
            self._publish_bridge_state()
        elif self.journal.fault is None:           # writing again, more to write: go on after other work
            self._journal_retry = loop.call_later(0, self._retry_journal)
            self._publish_bridge_state()
        else:
            self._journal_retry = loop.call_later(JOURNAL_RETRY_S, self._retry_journal)
            self._publish_bridge_state()

    def _limit_held(self) -> None:
        """Too many writes wait for the journal: give some up, the least needed first (see the module doc)."""
        journal = self.journal
        superseded = {"entry", "checkpoint"}
        dropped = journal.drop_held(lambda w: w.kind in superseded or (w.kind == "board" and
                                                                      w.sql.startswith("UPDATE")))
        records_lost: dict[str, int] = {}
        earlier: dict[str, int] = {}         # the gap notes of earlier passes, merged into this one
        for write in dropped:
            if write.kind == "entry" and write.params[1] == "gap":
                count = json.loads(write.params[3])["records_not_journaled"]
                earlier[write.board] = earlier.get(write.board, 0) + count
            elif write.kind == "entry":
                records_lost[write.board] = records_lost.get(write.board, 0) + 1
        recheckpoint = {w.board for w in dropped if w.kind in superseded}
        if records_lost:
            self.journal_loss["records_not_journaled"] += sum(records_lost.values())
            log.error("journal: %d writes held, over the bound of %d: %d record(s) of %d board(s) given up "
                      "(engines checkpointed instead; the export recording has a gap)", journal.held + len(dropped),
                      MAX_HELD_WRITES, sum(records_lost.values()), len(records_lost))
        for sess in self.boards.values():     # the board rows and checkpoints given up, as they are now
            journal.update_board(sess.board, boot=sess.boot, last_seq=sess.last_seq, t_offset=sess.t_offset,
                                 last_t=sess.last_t)
            journal.mark_published(sess.board, sess.published)
            gap = records_lost.get(sess.board, 0) + earlier.get(sess.board, 0)
            if gap:
                journal.add_entry(sess.board, "gap", sess.last_t, json.dumps({"records_not_journaled": gap}),
                                  "bridge", iso_now())
            if sess.board in recheckpoint:
                self.checkpoint(sess)
        if journal.held <= MAX_HELD_WRITES:
            return
        # Events the broker has (or the MQTT queue holds) are the next to go, then the oldest others.
        queued = {sess.board: sess.queued_seq for sess in self.boards.values()}
        gone = journal.drop_held(lambda w: w.kind == "event" and w.seq <= queued.get(w.board, 0))
        self.journal_loss["events_not_journaled"] += len(gone)
        excess = journal.held - MAX_HELD_WRITES // 2
        if excess > 0:
            chosen: set[tuple[str, int]] = set()
            for write in journal.held_writes():    # oldest first
                if write.kind == "event":
                    chosen.add((write.board, write.seq))
                    if len(chosen) >= excess:
                        break
            lost = journal.drop_held(lambda w: w.kind == "event" and (w.board, w.seq) in chosen)
            for write in lost:
                lost_sess = self.boards.get(write.board)
                if lost_sess is not None and write.seq > lost_sess.queued_seq:
                    lost_sess.queued_seq = write.seq      # never published: the board's stream has a gap there
            self.journal_loss["events_lost"] += len(lost)
            log.error("journal: %d event(s) neither journaled nor published dropped (bound %d)", len(lost),
                      MAX_HELD_WRITES)
        self._publish_bridge_state()

    def journal_status(self) -> dict[str, Any]:
        """Return the journal's health: whether it writes, why not, and what is held or was given up."""
        fault = self.journal.fault
        out: dict[str, Any] = {"ok": fault is None, "held_writes": self.journal.held,
                               "poisoned_writes": self.journal.poisoned, **self.journal_loss}
        if fault is not None:
            out.update(error=fault.reason, since=fault.since, failures=fault.failures)
        return out

    def problems(self) -> list[dict[str, Any]]:
        """Return what the operator should know about now (empty when all is well)."""
        out: list[dict[str, Any]] = []
        fault = self.journal.fault
        if fault is not None:
            out.append({"code": "journal_write_failed", "reason": fault.reason, "since": fault.since,
                        "held_writes": self.journal.held})
        if any(self.journal_loss.values()):
            out.append({"code": "journal_incomplete", **self.journal_loss})
        out.extend(conflict.as_dict() for conflict in self.identity_conflicts.values())
        return out

    def _publish_bridge_state(self) -> None:
        problems = self.problems()
        payload: dict[str, Any] = {"state": "online"}
        if problems:
            payload["problems"] = problems
        self.mqtt.retain(f"{self.base}/bridge/state", dumps(payload))

    def pump(self) -> None:
        """Offer journaled, not yet queued events to MQTT while its queue has room."""
        for sess in list(self._pump_boards):
            while sess.queued_seq < sess.event_seq:
                room = self.mqtt.room()
                if room <= 0:
                    return
                while sess.backlog and sess.backlog[0][0] <= sess.queued_seq:
                    sess.backlog.popleft()
                if sess.backlog and sess.backlog[0][0] == sess.queued_seq + 1:
                    batch = [sess.backlog.popleft() for _ in range(min(room, len(sess.backlog)))]
                else:
                    batch = [(seq, body.encode()) for seq, body in
                             self.journal.events(sess.board, after=sess.queued_seq, limit=room)]
                    if not batch:
                        break
                topic = self._topic(sess.board, "events")
                for seq, body in batch:
                    if seq != sess.queued_seq + 1:
                        break
                    self.mqtt.offer_event(topic, body, (sess.board, seq))
                    sess.queued_seq = seq
            if sess.queued_seq >= sess.event_seq:
                self._pump_boards.discard(sess)

    # -- commands from MQTT -------------------------------------------------------------------------------
    async def on_command(self, topic: str, raw: bytes, retained: bool) -> None:
        parts = topic.split("/")
        base_parts = self.base.split("/")
        rest = parts[len(base_parts):]
        if len(rest) == 3 and rest[0] == "boards" and rest[2] == "set":
            self._board_command(rest[1], raw, retained)
        elif len(rest) == 3 and rest[0] == "bridge" and rest[1] == "request":
            self._bridge_request(rest[2], raw, retained)

    def _reply(self, topic: str, transaction: Any, error: str | None = None, **extra: Any) -> None:
        payload: dict[str, Any] = {"status": "error" if error else "ok", **extra}
        if error:
            payload["error"] = error
            log.warning("%s: %s", topic, error)
        if transaction is not None:
            payload["transaction"] = transaction
        self.mqtt.reply(topic, payload)

    def _board_command(self, board: str, raw: bytes, retained: bool) -> None:
        reply_topic = self._topic(board, "response")
        payload, problem = decode_payload(raw)
        transaction = transaction_of(payload)
        command = payload.get("command") if isinstance(payload, dict) else None
        if retained:
            return self._reply(reply_topic, transaction, "retained commands are ignored (retain=false)")
        if problem:
            return self._reply(reply_topic, transaction, problem)
        if not isinstance(command, str) or command not in BOARD_COMMANDS:
            return self._reply(reply_topic, transaction,
                               f"unknown command {command!r}; one of {', '.join(BOARD_COMMANDS)}")
        problem = validate(payload, BOARD_COMMANDS[command], envelope=("transaction", "command"))
        if problem:
            return self._reply(reply_topic, transaction, problem, command=command)
        sess = self.boards.get(board)
        if sess is None:
            return self._reply(reply_topic, transaction, f"unknown board {board!r}", command=command)
        t = self.board_now(sess)
        record: records.Record | None = None
        if command == "new_game":
            record = records.Setup(t, chess.STARTING_FEN)
        elif command == "setup":
            record = records.Setup(t, payload["fen"], payload.get("chess960", False))
        elif command == "promote":
            record = records.from_dict({"t": t, "type": "promote", "piece": payload["piece"]})
        elif command == "takeback":
            record = records.TakebackRequest(t, payload["ply"])
        elif command == "resync":
            try:
                record = records.from_dict({"t": t, "type": "resync",
                                            **{k: payload[k] for k in ("moves", "fen") if k in payload}})
            except records.RecordError as exc:
                return self._reply(reply_topic, transaction, exc.reason, command=command)
        elif command == "result":
            try:
                record = records.from_dict({"t": t, "type": "result", "result": payload["result"],
                                            "reason": payload["reason"]})
            except records.RecordError as exc:
                return self._reply(reply_topic, transaction, exc.reason, command=command)
        elif command == "assign":
            names = {"round": "Round", "board": "Board", "white": "White", "black": "Black", "event": "Event",
                     "site": "Site"}
            headers = {names[k]: str(v) for k, v in payload.items() if k in names}
            sess.headers.update(headers)
            self.journal.add_entry(board, "meta", sess.last_t, json.dumps(headers), "operator", iso_now())
            self._publish_board_retained(sess)
        seq = sess.event_seq
        if record is not None:
            sess.arrival_t, sess.arrival_host = t, time.monotonic()
            self.feed(sess, record, "operator")
        self._schedule_flush()
        # A resync or result the engine could not apply is answered with its reason (the event is published as well).
        rejected = [line for event_seq, line in sess.backlog if event_seq > seq
                    and (b'"resync_rejected"' in line or b'"result_rejected"' in line)]
        if rejected:
            return self._reply(reply_topic, transaction, json.loads(rejected[0])["reason"], command=command)
        self._reply(reply_topic, transaction, command=command)

    def _bridge_request(self, cmd: str, raw: bytes, retained: bool) -> None:
        reply_topic = f"{self.base}/bridge/response/{cmd}"
        payload, problem = decode_payload(raw)
        transaction = transaction_of(payload)
        if retained:
            return self._reply(reply_topic, transaction, "retained requests are ignored")
        if problem:
            return self._reply(reply_topic, transaction, problem)
        schema = BRIDGE_REQUESTS.get(cmd)
        if schema is None:
            return self._reply(reply_topic, transaction,
                               f"unknown request {cmd!r}; one of {', '.join(BRIDGE_REQUESTS)}")
        problem = validate(payload, schema)
        if problem:
            return self._reply(reply_topic, transaction, problem)
        if cmd == "health_check":
            online = sum(1 for s in self.boards.values() if s.link is not None)
            problems = self.problems()
            return self._reply(reply_topic, transaction, data={
                "healthy": not problems, "session": self.session, "boards_online": online,
                "problems": problems, "journal": self.journal_status(), "time": iso_now()})
        if cmd == "boards":
            data = []
            for sess in self.boards.values():
                st = sess.engine.state()
                data.append({"board": sess.board, "online": sess.link is not None,
                             "port": sess.link.path if sess.link else None, "game": st.game, "ply": st.ply})
            return self._reply(reply_topic, transaction, data={"boards": data})
        target = self.boards.get(payload["board"])
        if target is None or target.link is None:
            return self._reply(reply_topic, transaction, f"board {payload['board']!r} is not online")
        if cmd == "snapshot":
            self.request_snapshot(target, force=True)
        elif cmd == "leds":
            if payload.get("clear"):
                target.link.send({"cmd": "leds", "clear": True})
            elif "squares" in payload and "color" in payload:
                target.link.send(leds_command(payload["squares"], payload["color"]))
            else:
                return self._reply(reply_topic, transaction, "give 'squares' and 'color', or 'clear': true")
        self._reply(reply_topic, transaction, data={})

    # -- running ------------------------------------------------------------------------------------------
    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.journal.checkpoint_in_background()
        self.restore()
        self._publish_info()
        self.flush()
        tasks = [asyncio.create_task(self.mqtt.run(), name="mqtt"),
                 asyncio.create_task(self.scan_loop(), name="scan")]
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
        for link in list(self.links.values()):
            link.close()
        for link in list(self.links.values()):
            await asyncio.to_thread(link.join, 1.0)
        for sess in self.boards.values():
            if sess.timer is not None:
                sess.timer.cancel()
            if sess.since_checkpoint:
                self.checkpoint(sess)       # the next start replays nothing
        if self._journal_retry is not None:
            self._journal_retry.cancel()
            self._journal_retry = None
        self.flush()
        # Give the queue a moment to drain, then say goodbye.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                while self.mqtt.connected and self.mqtt.pending():
                    await asyncio.sleep(0.02)
        final = [(self._topic(b, "availability"), OFFLINE) for b in self.boards]
        final.append((f"{self.base}/bridge/state", OFFLINE))
        await self.mqtt.close(final)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.flush()
        self.journal.close()


# -- the ``touchmove run`` subcommand ---------------------------------------------------------------------
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", metavar="FILE", required=True, help="TOML configuration file")
    parser.add_argument("--port", action="append", default=[], metavar="PATH",
                        help="serial port path or glob (added to the config's [serial] ports)")
    parser.add_argument("--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS, metavar="LEVEL",
                        help=f"one of {', '.join(LOG_LEVELS)} (default INFO)")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load(args.config)
        checkpoint.ensure_key(checkpoint.key_path(config.checkpoint_key))
    except (ConfigError, checkpoint.CheckpointKeyError) as exc:
        print(f"touchmove run: {exc}", file=sys.stderr)
        return 2
    if args.port:
        config = replace(config, serial=replace(config.serial, ports=config.serial.ports + tuple(args.port)))
    Path(config.journal).parent.mkdir(parents=True, exist_ok=True)   # an OSError is the CLI's one-line error
    return asyncio.run(serve(config))


async def serve(config: BridgeConfig) -> int:
    bridge = Bridge(config)
    signals = StopSignals(asyncio.get_running_loop(), bridge.stop)
    log.info("touchmove bridge %s, session %s, journal %s, broker %s", __version__, bridge.session,
             config.journal, config.mqtt.url)
    await bridge.run()
    return signals.status
