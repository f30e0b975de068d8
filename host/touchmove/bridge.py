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
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import os
import signal
import time
import uuid
from collections import deque
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import chess
import chess.pgn

from touchmove import __version__, records
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
from touchmove.serial_link import DecodeError, Message, SerialLink, decode, find_ports

log = logging.getLogger(__name__)

#: Lines kept from a port before its board has said hello.
MAX_PENDING = 4000
#: Events kept in memory per board while the MQTT queue is full (older ones are re-read from the journal).
MAX_BACKLOG = 2000
#: Minimum seconds between two snapshot requests to one board.
SNAPSHOT_INTERVAL = 0.5

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


def replay_entries(journal: Journal, board: str, settle_ms: int) -> tuple[Engine, int, dict[str, str]]:
    """Rebuild a board's engine from its journal; return it, the number of events it gave, and PGN headers."""
    engine = Engine(settle_ms=settle_ms)
    count = 0
    headers: dict[str, str] = {}
    for entry in journal.entries(board):
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
        self.journal = Journal(config.journal)
        self.boards: dict[str, BoardSession] = {}
        self.links: dict[str, SerialLink] = {}          # by real path
        self.link_paths: dict[str, SerialLink] = {}     # by the name it was found as
        self.pending_lines: dict[SerialLink, list[bytes | None]] = {}
        self.mqtt = MqttLink(config.mqtt, on_command=self.on_command, on_acked=self._on_acked,
                             on_connected=self._on_mqtt_connected)
        self.stats: dict[str, int] = {"lines": 0, "records": 0, "malformed": 0, "gaps": 0, "events": 0}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush_scheduled = False
        self._dirty_boards: set[BoardSession] = set()
        self._pump_boards: set[BoardSession] = set()
        self._stopped = asyncio.Event()

    # -- start-up: resume from the journal ----------------------------------------------------------------
    def restore(self) -> None:
        """Rebuild every board known to the journal and queue the events not yet published."""
        now = time.monotonic()
        for row in self.journal.boards():
            engine, produced, headers = replay_entries(self.journal, row.board, self.config.settle_ms)
            journaled = self.journal.event_count(row.board)
            if produced != journaled:
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
                    if link.board is None:
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
        sess = self.boards.get(link.board) if link.board else None
        if sess is not None and sess.link is link:
            sess.link = None
            self.mqtt.retain(self._topic(sess.board, "availability"), OFFLINE)
            self._publish_info()

    def handle_lines(self, link: SerialLink, lines: list[bytes | None]) -> None:
        """Process lines from one port (event loop)."""
        for line in lines:
            self.stats["lines"] += 1
            try:
                msg = decode(line)
            except DecodeError as exc:
                self.stats["malformed"] += 1
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
        sess = self.boards.get(board)
        if sess is None:
            sess = BoardSession(board, Engine(settle_ms=self.config.settle_ms))
            self.boards[board] = sess
            self.journal.ensure_board(board)
        if sess.link is not None and sess.link is not link:
            log.warning("board %s now on %s (was %s)", board, link.path, sess.link.path)
            sess.link.close()
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
        board_t = max(msg.t + sess.t_offset, sess.last_t)
        now = time.monotonic()
        self._learn_rate(sess, msg.t + sess.t_offset, now)
        sess.arrival_t = board_t
        sess.arrival_host = now
        record = msg.record
        if (isinstance(record, records.Snapshot) and record.type == "heartbeat"
                and sess.engine.next_deadline() is None and sess.engine.state().occupancy == record.occ):
            return   # a heartbeat that tells the engine nothing new: not fed, not journaled (a small journal)
        self.feed(sess, replace(record, t=board_t), "serial")

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
        t = max(deadline, self.board_now(sess))
        sess.last_t = t
        self._mark(sess)
        self.journal.add_entry(sess.board, "advance", t, None, "timer", iso_now())
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
        for event in events:
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
                sess.link.send({"cmd": "leds", "squares": squares, "color": LED_CORRECT})
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
        self.journal.commit()
        self._pump_boards |= {sess for sess in dirty if sess.queued_seq < sess.event_seq}
        self.pump()

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
        elif command == "assign":
            names = {"round": "Round", "board": "Board", "white": "White", "black": "Black", "event": "Event",
                     "site": "Site"}
            headers = {names[k]: str(v) for k, v in payload.items() if k in names}
            sess.headers.update(headers)
            self.journal.add_entry(board, "meta", sess.last_t, json.dumps(headers), "operator", iso_now())
            self._publish_board_retained(sess)
        if record is not None:
            sess.arrival_t, sess.arrival_host = t, time.monotonic()
            self.feed(sess, record, "operator")
        self._schedule_flush()
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
            return self._reply(reply_topic, transaction, data={"healthy": True, "session": self.session,
                                                                "boards_online": online, "time": iso_now()})
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
                target.link.send({"cmd": "leds", "squares": payload["squares"], "color": payload["color"]})
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
def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", metavar="FILE", required=True, help="TOML configuration file")
    parser.add_argument("--port", action="append", default=[], metavar="PATH",
                        help="serial port path or glob (added to the config's [serial] ports)")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING ...")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load(args.config)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    if args.port:
        config = replace(config, serial=replace(config.serial, ports=config.serial.ports + tuple(args.port)))
    return asyncio.run(serve(config))


async def serve(config: BridgeConfig) -> int:
    bridge = Bridge(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, bridge.stop)
    log.info("touchmove bridge %s, session %s, journal %s, broker %s", __version__, bridge.session,
             config.journal, config.mqtt.url)
    await bridge.run()
    return 0
