"""The serial side of the bridge: ports found and opened, their lines decoded, boards bound by their ``hello``
(identity conflicts raised, :mod:`touchmove.bridge.identity`), sequence gaps answered with a snapshot request,
and each record put on the board's time (:mod:`touchmove.bridge.session`) before the bridge feeds it.

Unplug, replug, power cycles: a port error closes that link only; the board goes ``offline``; ports are
rescanned every ``rescan_s``. On ``hello`` the bridge asks for a snapshot; a new ``boot`` restarts the device
clock, and the board's offset keeps board time monotonic. Lines waiting in a port before its board said hello
are kept (up to :data:`MAX_PENDING`) and played once it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

import chess

from touchmove import boards, records
from touchmove.bridge import flicker
from touchmove.bridge.identity import IdentityConflict
from touchmove.bridge.port_report import PortReport
from touchmove.bridge.session import BoardSession
from touchmove.clocks import Clock
from touchmove.config import SerialConfig
from touchmove.log_limit import LogLimit
from touchmove.mqtt.wire import iso_now
from touchmove.serial.discovery import find_ports
from touchmove.serial.lines import FROM_BOARD, CheckFailed, DecodeError, Message, decode
from touchmove.serial.link import SerialLink

log = logging.getLogger("touchmove.bridge")


def accepted_by(link: SerialLink) -> frozenset[str]:
    """Return the record types ``link``'s lines may carry: a touchmove board's unless the link says otherwise
    (a vendor board's adapter, :class:`touchmove.boards.link.BoardLink`)."""
    return getattr(link, "accepts", FROM_BOARD)

#: Lines kept from a port before its board has said hello.
MAX_PENDING = 4000
#: Minimum seconds between two snapshot requests to one board.
SNAPSHOT_INTERVAL = 0.5
#: A port whose board has not said hello is asked again at most this often (s). A board still booting reads every
#: command queued meanwhile once it runs, and answers each with a hello and a snapshot: asked at every rescan
#: (0.2 s) a board that took a minute to boot answered 300 of them while its first moves were played, and its
#: output, full, dropped events for snapshots (moves then read from snapshots, wrong ones among them).
HELLO_RETRY_S = 2.0
#: The port scan woken this much later than asked (s): the bridge was not run meanwhile (a loaded host), and no
#: square is judged quiet on that pass.
STALL_S = 0.5
#: Woken this much later than asked (s), the bridge says so in its log (a silence or a transposition that follows
#: is then the host's, not the board's).
LATE_WARNING_S = 1.0


class PortGate(Protocol):
    """What the bridge refuses from ports, checks at a board's hello, and tells of a board's error records
    (:mod:`touchmove.bridge.admission`)."""

    def refused_line(self, link: SerialLink, exc: DecodeError) -> bool: ...
    def said_hello(self, link: SerialLink, sess: BoardSession, fields: dict[str, Any]) -> None: ...
    def port_closed(self, link: SerialLink) -> None: ...
    def board_error(self, port: str, sess: BoardSession, why: object) -> None: ...


class PortsPipeline(Protocol):
    """What the ports need of the event pipeline (:mod:`touchmove.bridge.pipeline`), and no more: its boards and
    counters, its event loop, a session for a board that says hello (made and journaled when new), a record sink
    into a board's engine, a board marked for the next flush, the flush, and the alerts the bridge raises itself."""

    @property
    def boards(self) -> Mapping[str, BoardSession]: ...
    @property
    def stats(self) -> dict[str, int]: ...

    def event_loop(self) -> asyncio.AbstractEventLoop: ...
    def bind(self, board: str, min_settle_ms: int = 0) -> BoardSession: ...
    def feed(self, sess: BoardSession, record: records.Record, source: str) -> None: ...
    def mark(self, sess: BoardSession) -> None: ...
    def schedule_flush(self) -> None: ...
    def emit_bridge_alert(self, sess: BoardSession, code: str, detail: dict[str, Any]) -> None: ...


class Availability(Protocol):
    """What the ports tell the publisher (:mod:`touchmove.bridge.publisher`): a board online or offline, and the
    bridge's state (its problems) changed."""

    def board_online(self, sess: BoardSession) -> None: ...
    def board_offline(self, board: str) -> None: ...
    def publish_bridge_state(self) -> None: ...


class BoardPorts:
    """The serial ports of one bridge and the boards bound to them."""

    def __init__(self, config: SerialConfig, *, pipeline: PortsPipeline, publisher: Availability, gate: PortGate,
                 clock: Clock) -> None:
        self.config = config
        self.pipeline = pipeline
        self.publisher = publisher
        #: what the bridge refuses from ports (:class:`~touchmove.bridge.admission.Admission`)
        self.gate = gate
        self.clock = clock
        self.links: dict[str, SerialLink] = {}          # by real path
        self.link_paths: dict[str, SerialLink] = {}     # by the name it was found as
        self.pending_lines: dict[SerialLink, list[bytes | None]] = {}
        self.identity_conflicts: dict[tuple[str, str], IdentityConflict] = {}
        # what is watched and found, at INFO
        self.report = PortReport(config.ports, config.usb, config.baudrate, boards=config.boards)
        self.bad_input_log = LogLimit(log, "bad input")   # per port: a flood of garbage is a few lines and a count

    def _lines_from_thread(self, link: SerialLink, lines: list[bytes | None]) -> None:
        if not link.threaded:
            self.handle_lines(link, lines)
            return
        with contextlib.suppress(RuntimeError):   # loop closed during shutdown
            self.pipeline.event_loop().call_soon_threadsafe(self.handle_lines, link, lines)

    def _closed_from_thread(self, link: SerialLink, reason: str) -> None:
        if not link.threaded:
            self.pipeline.event_loop().call_soon(self.handle_closed, link, reason)
            return
        with contextlib.suppress(RuntimeError):
            self.pipeline.event_loop().call_soon_threadsafe(self.handle_closed, link, reason)

    def open_port(self, path: str) -> SerialLink | None:
        if path in self.link_paths:
            return None       # already open under this name (checked without a system call: scans are frequent)
        real = os.path.realpath(path)
        if real in self.links:
            return None
        link = boards.open_link(path, self.config, self._lines_from_thread,
                                self._closed_from_thread, self.clock) or SerialLink(
            path, self.config.baudrate, self._lines_from_thread, self._closed_from_thread)
        try:
            link.open(self.pipeline.event_loop())
        except Exception as exc:
            self.report.refused_port(path, exc)
            return None
        link.key = real
        self.links[real] = link
        self.link_paths[path] = link
        self.pending_lines[link] = []
        log.info("port %s opened", path)
        self.report.opened(path)
        self._ask_hello(link)
        return link

    def _ask_hello(self, link: SerialLink) -> None:
        """Send ``link`` a hello command unless one went less than :data:`HELLO_RETRY_S` ago."""
        now = self.clock.monotonic()
        if now - link.hello_asked < HELLO_RETRY_S:
            return
        link.hello_asked = now
        link.send({"cmd": "hello"})

    async def scan_loop(self) -> None:
        cfg = self.config
        self.report.started()
        stalled = False
        while True:
            try:
                paths = [*find_ports(cfg.ports, cfg.usb), *boards.find_board_ports(cfg)]
                self.report.scanned(paths)
                for path in paths:
                    self.open_port(path)
                self.report.check_silent()
                self.bad_input_log.flush()
                for sess in list(self.pipeline.boards.values()):
                    if sess.flicker.flickering and not stalled:
                        self.flicker_quiet(sess, self.clock.monotonic())
                for link in list(self.links.values()):
                    if link.board is None and link.held_back is None:
                        self._ask_hello(link)
            except Exception:
                log.exception("port scan failed")
            slept_from = self.clock.monotonic()
            await asyncio.sleep(cfg.rescan_s)
            # woken late, the bridge itself was not run: what the ports hold is read before any square is
            # judged quiet (the changes of a flickering square wait there)
            late = self.clock.monotonic() - slept_from - cfg.rescan_s
            stalled = late > STALL_S
            if late > LATE_WARNING_S:
                log.warning("the bridge ran %.1f s late (its host overloaded, or a step that blocked it): boards' "
                            "changes read meanwhile carry the time they were read", late)

    def handle_closed(self, link: SerialLink, reason: str) -> None:
        if self.links.get(link.key) is link:
            del self.links[link.key]
        if self.link_paths.get(link.path) is link:
            del self.link_paths[link.path]
        self.pending_lines.pop(link, None)
        log.info("port %s closed (%s)", link.path, reason)
        self.report.closed(link.path)
        self.gate.port_closed(link)
        if any(key[0] == link.path for key in self.identity_conflicts):
            self.identity_conflicts = {k: v for k, v in self.identity_conflicts.items() if k[0] != link.path}
            self.publisher.publish_bridge_state()
        sess = self.pipeline.boards.get(link.board) if link.board else None
        if sess is not None and sess.link is link:
            sess.link = None
            self.publisher.board_offline(sess.board)
            for other in [*self.pending_lines]:      # a port held back for this id takes over now
                if other.held_back == sess.board:
                    log.info("board %s: port %s, held back, is asked to say hello again", sess.board, other.path)
                    other.send({"cmd": "hello"})

    async def close_all(self) -> None:
        """Close every port and wait (a second each) for their readers to end (at shutdown)."""
        for link in list(self.links.values()):
            link.close()
        for link in list(self.links.values()):
            await asyncio.to_thread(link.join, 1.0)

    def _identity_conflict(self, link: SerialLink, claimed: str, sess: BoardSession) -> None:
        """Raise ``board_identity`` (once per port and id): ``link`` says ``claimed``, which the binding of
        ``sess`` (the port's own board, or the board that holds the id on another port) contradicts."""
        key = (link.path, claimed)
        if key in self.identity_conflicts:
            return
        self.pipeline.stats["identity_conflicts"] += 1
        if link.board is not None:
            conflict = IdentityConflict(link.path, claimed, bound=link.board, held_by=None, since=iso_now())
        else:
            holder = sess.link.path if sess.link is not None else None
            conflict = IdentityConflict(link.path, claimed, bound=None, held_by=holder, since=iso_now())
        self.identity_conflicts[key] = conflict
        log.error("board identity: %s", conflict.message())
        self.pipeline.emit_bridge_alert(sess, "board_identity", conflict.as_dict())
        self.publisher.publish_bridge_state()

    def handle_lines(self, link: SerialLink, lines: list[bytes | None]) -> None:
        """Process lines from one port (event loop)."""
        for line in lines:
            self.pipeline.stats["lines"] += 1
            try:
                msg = decode(line, accepted_by(link), checked=getattr(link, "checked", False))
            except DecodeError as exc:
                self.pipeline.stats["malformed"] += 1
                if isinstance(exc, CheckFailed):
                    # lost or spliced on the way (valid JSON or not): refused, counted, and, like any malformed
                    # line, answered with a snapshot request below (the changes it carried come back from it)
                    self.pipeline.stats["check_failed"] += 1
                if link.board is None:
                    self.report.line(link.path, touchmove=False)
                if self.gate.refused_line(link, exc):
                    continue
                if exc.out_of_range:
                    # Well-formed but implausible: skipped and nothing else (the seq it used, if any, shows up
                    # as a gap at the next line, which asks for a snapshot).
                    self.pipeline.stats["out_of_range"] += 1
                    self.bad_input_log.log(logging.ERROR, link.path, "%s: line with an out-of-range number skipped "
                                           "(%s): %.120r", link.board or link.path, exc, line)
                    continue
                self.bad_input_log.log(logging.WARNING, link.path, "%s: malformed line skipped (%s): %.80r",
                                       link.board or link.path, exc, line)
                if link.board is not None:
                    self.request_snapshot(self.pipeline.boards[link.board])
                continue
            if link.board is None:
                self.report.line(link.path, touchmove=True)
            if msg.checked:
                link.checked = True
            elif msg.kind == "hello":
                link.checked = False   # older firmware after a restart: its lines carry no check
            if msg.kind == "hello":
                self._identify(link, msg)
            elif link.board is None:
                pending = self.pending_lines.get(link)
                if pending is not None and len(pending) < MAX_PENDING:
                    pending.append(line)
            else:
                self._handle_message(self.pipeline.boards[link.board], msg)
        self.pipeline.schedule_flush()

    def _identify(self, link: SerialLink, hello: Message) -> None:
        board = str(hello.fields["board"])
        boot = str(hello.fields.get("boot", ""))
        if link.board is not None and board != link.board:
            # The port's board now says another id: the port keeps its first one (the game goes on there).
            self._identity_conflict(link, board, self.pipeline.boards[link.board])
            board = link.board
        sess = self.pipeline.boards.get(board)
        if sess is not None and sess.link is not None and sess.link is not link:
            # Another port that is still open serves this id: hold this one back (its lines wait) until that
            # one closes, instead of moving the board back and forth between the two.
            self._identity_conflict(link, board, sess)
            link.held_back = board
            return
        link.held_back = None
        # The hello of a board already bound here, same boot: the answer to a hello command asked before it said
        # its own (it comes with a snapshot of its own): no resync asked, nothing logged.
        repeated = sess is not None and sess.link is link and link.board == board and boot == sess.boot
        if sess is None:
            sess = self.pipeline.bind(board, min_settle_ms=getattr(link, "min_settle_ms", 0))  # a scanning board's
        first_contact = link.board is None
        if first_contact:
            self.report.bound(link.path, board)
        link.board = board
        sess.link = link
        sess.rate = float(hello.fields.get("rate", 1.0))   # 1 unless a simulation says it runs faster
        self.gate.said_hello(link, sess, hello.fields)
        pending = self.pending_lines.pop(link, []) if first_contact else []
        self.pending_lines.pop(link, None)
        # The lines buffered before the hello came from the same boot as this hello (a reboot says hello).
        msgs: list[Message] = []
        for line in pending:
            with contextlib.suppress(DecodeError):
                msgs.append(decode(line, accepted_by(link)))
        if boot != sess.boot:
            first_t = msgs[0].t if msgs else hello.t
            if sess.boot is None and sess.last_t == 0:
                sess.t_offset = 0          # first contact: board time is device time
            else:
                elapsed = int((self.clock.monotonic() - sess.arrival_host) * 1000) if sess.arrival_host else 0
                sess.t_offset = sess.last_t + max(0, elapsed) - first_t
            log.info("board %s: boot %s on %s", board, boot, link.path)
            sess.boot = boot
            sess.last_seq = None
            sess.device_t = None
            self.pipeline.mark(sess)
        elif not repeated:
            log.info("board %s: back on %s (same boot)", board, link.path)
        for msg in msgs:
            if sess.last_seq is not None and msg.seq is not None and msg.seq <= sess.last_seq:
                continue    # already journaled before a daemon restart
            self._handle_message(sess, msg)
        self._check_seq(sess, hello)
        if repeated:
            return
        self.publisher.board_online(sess)
        self.request_snapshot(sess, force=True)

    def _check_seq(self, sess: BoardSession, msg: Message) -> None:
        if msg.seq is None:
            return
        if sess.last_seq is not None and msg.seq != sess.last_seq + 1 and msg.seq > sess.last_seq:
            self.pipeline.stats["gaps"] += 1
            log.warning("board %s: seq gap (%d after %d); requesting a snapshot", sess.board, msg.seq,
                        sess.last_seq)
            self.request_snapshot(sess)
        sess.last_seq = msg.seq
        self.pipeline.mark(sess)

    def _flicker_started(self, sess: BoardSession, sq: int) -> None:
        """A square of ``sess``'s board flickers: one ``square_flicker`` alert naming it, and an error line."""
        name = chess.square_name(sq)
        port = sess.link.path if sess.link is not None else "(port closed)"
        message = (f"square {name} of board {sess.board} changes faster than any hand (more than "
                   f"{flicker.FLICKER_CHANGES} times in {flicker.FLICKER_WINDOW_MS} ms): its changes are coalesced "
                   "until it is quiet; check the square's sensor or the piece on it")
        log.error("%s", message)
        self.pipeline.emit_bridge_alert(sess, "square_flicker", {"square": name, "port": port, "message": message})

    def flicker_quiet(self, sess: BoardSession, now: float, changing: int | None = None) -> None:
        """End the flickers of ``sess``'s board that are quiet at host time ``now`` (s), but the square
        ``changing`` now: each square's last state goes on to the journal and the engine as one record."""
        for sq, ended, record in sess.flicker.quiet(now * 1000, max(sess.now(now), sess.last_t), changing):
            log.warning("board %s: square %s quiet again after %.1f s of flicker (%d changes coalesced)", sess.board,
                        chess.square_name(sq), (ended.last_at - ended.since) / 1000, ended.held)
            if record is not None:
                self.pipeline.feed(sess, record, "serial")

    def request_snapshot(self, sess: BoardSession, *, force: bool = False) -> None:
        now = self.clock.monotonic()
        if sess.link is None or (not force and now - sess.last_snapshot_request < SNAPSHOT_INTERVAL):
            return
        sess.last_snapshot_request = now
        sess.link.send({"cmd": "snapshot"})

    def _handle_message(self, sess: BoardSession, msg: Message) -> None:
        self._check_seq(sess, msg)
        if msg.record is None:
            if msg.kind == "error":
                self.bad_input_log.log(logging.WARNING, sess.link.path if sess.link is not None else sess.board,
                                       "board %s reports an error: %s", sess.board, msg.fields.get("why"))
                if isinstance(msg.fields.get("alert"), str):      # a vendor board's adapter (touchmove.boards)
                    self.pipeline.emit_bridge_alert(sess, msg.fields["alert"], dict(msg.fields.get("detail") or {}))
                else:
                    port = sess.link.path if sess.link is not None else "(port closed)"
                    self.gate.board_error(port, sess, msg.fields.get("why"))
            return
        now = self.clock.monotonic()
        board_t, jumped, changed = sess.board_time(msg.t, now)
        if jumped:
            self.pipeline.stats["time_jumps"] += 1
        if changed:
            self.pipeline.mark(sess)
        sess.arrival_t = board_t
        sess.arrival_host = now
        record = msg.record
        if sess.flicker.flickering:
            self.flicker_quiet(sess, now, record.sq if isinstance(record, records.Lift | records.Place) else None)
        if isinstance(record, records.Lift | records.Place):
            goes_on, started = sess.flicker.take(record, now * 1000)
            if started is not None:
                self._flicker_started(sess, record.sq)
            if not goes_on:
                return   # a flickering square: coalesced (not journaled, not fed) until it is quiet
        if (isinstance(record, records.Snapshot) and record.type == "heartbeat"
                and sess.engine.next_deadline() is None and sess.engine.state().occupancy == record.occ):
            return   # a heartbeat that tells the engine nothing new: not fed, not journaled (a small journal)
        self.pipeline.feed(sess, replace(record, t=board_t), "serial")
