"""The serial side: one link per board port, decoding wire protocol v1 (NDJSON) into recording-format records.

Serial library: pyserial (3.5) with one reader thread per port handing whole lines to the asyncio loop with
``call_soon_threadsafe``. pyserial is the de-facto standard, works the same on USB CDC devices, UARTs and
pseudo-terminals (the demo and the tests), on Linux, macOS and Windows, and its ``list_ports`` finds boards
by USB VID/PID/serial number. A blocking read in a thread gives the lowest latency for little CPU (the thread
sleeps in ``select``), and a port error stays inside its thread. ``pyserial-asyncio`` is unmaintained;
``pyserial-asyncio-fast`` only wraps the same pyserial objects in ``add_reader`` (POSIX only), which saves
a thread per board but not work.

Pure parts (:class:`LineSplitter`, :func:`decode`) are separate from the thread so they can be fuzzed.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import logging
import os
import select
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import chess

from touchmove import board_ids, records
from touchmove.config import UsbMatch
from touchmove.line_check import Check, check_line

log = logging.getLogger(__name__)

#: Longest line accepted from a board (a snapshot with every field is about 80 bytes).
MAX_LINE = 512
#: Most bytes taken from one port per turn of the event loop: a board flooding its port is served a turn at a
#: time, as every other port is, and the rest waits in its port (its own backlog, no one else's). A board's
#: normal bursts (a hello and its snapshot, a DGT scan's field updates) pass in a few turns.
READ_PER_TURN = 256
#: A port's turn that took longer than this (s: decoding and the engine's work on what it read; wall time, so
#: on a busy host the bridge's own boards come first) ...
TURN_BUDGET_S = 0.004
#: ... when the port has a backlog (a full :data:`READ_PER_TURN` read) makes it rest, unread, this many times as
#: long: a board flooding the bridge gets at most about 1 / (1 + PORT_REST) of its time, and the boards beside it
#: keep theirs (bench/bridge_latency.py --flood).
PORT_REST = 4

#: Button ids that are clock presses, and the side that pressed.
CLOCK_BUTTONS = {"clock_white": chess.WHITE, "clock_black": chess.BLACK}


class LineSplitter:
    """Cuts a byte stream into lines (``\\n`` or ``\\r\\n``); a line over ``max_line`` is dropped whole.

    :meth:`feed` returns the complete lines, each as bytes; ``None`` in the list stands for an oversized line
    (reported by the caller as malformed, so it triggers a resync).
    """

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._overflow = False

    def feed(self, data: bytes) -> list[bytes | None]:
        out: list[bytes | None] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                chunk = data[start:]
                if not self._overflow:
                    self._buf += chunk
                    if len(self._buf) > self.max_line:
                        self._buf.clear()
                        self._overflow = True
                return out
            chunk = data[start:end]
            start = end + 1
            if self._overflow or len(self._buf) + len(chunk) > self.max_line:
                out.append(None)
            else:
                line = bytes(self._buf + chunk).rstrip(b"\r")
                if line.strip():
                    out.append(line)
            self._buf.clear()
            self._overflow = False


@dataclass(frozen=True)
class Message:
    """One decoded line from a board."""

    record: records.Record | None   # what the rules engine gets (None for protocol-only messages)
    kind: str                       # the message type (``hello``, ``lift``, ``button`` ...)
    seq: int | None = None
    t: int = 0
    fields: dict[str, Any] = field(default_factory=dict)
    checked: bool = False           # the line carried a check (``ck``, :mod:`touchmove.line_check`) that held


#: Largest message counter accepted (the firmware counts per boot from 0).
MAX_SEQ = 2**40
#: Longest boot id accepted in a hello.
MAX_BOOT = 64
#: Fastest clock a simulated board may say it runs (device ms per real ms; a real board says nothing: 1).
MAX_RATE = 1000


#: Longest firmware identification accepted in a hello (``fw``: name and version, e.g. ``touchmove-fw/0.1.0``).
MAX_FW = 64
#: What a board may send (docs/recording-format.md): sensor changes, snapshots, its buttons, clock and promotion
#: choice, protocol messages. Operator records (result, takeback, resync, setup) come only through the
#: authenticated MQTT command path (:mod:`touchmove.bridge.commands`), never from a serial port.
FROM_BOARD = frozenset({"lift", "place", "snapshot", "heartbeat", "clock", "promote", *records.PROTOCOL_ONLY_TYPES})
#: What the host's own adapter of a vendor's board (:mod:`touchmove.boards`) may add to that, read from the pieces
#: the board reports: a Chess960 start array set up (``setup``), a result shown with the kings or DGT's result
#: pieces (``result``). The adapter writes these itself; the board's bytes can only show pieces, never send them.
FROM_BOARD_ADAPTER = FROM_BOARD | {"setup", "result"}


class DecodeError(ValueError):
    """A line that is not a valid message; ``out_of_range`` when it is well-formed but a number is not
    plausible (the bridge logs those as errors)."""

    def __init__(self, message: str, *, out_of_range: bool = False) -> None:
        super().__init__(message)
        self.out_of_range = out_of_range


class BoardIdRefused(DecodeError):
    """A ``hello`` whose board id breaks the rule of :mod:`touchmove.board_ids`; ``claimed`` is what it said."""

    def __init__(self, claimed: object) -> None:
        super().__init__(f"'hello' board id {board_ids.shown(claimed)} refused: {board_ids.id_problem(claimed)}")
        self.claimed = claimed


class OperatorRecordRefused(DecodeError):
    """A record only an operator may give (result, takeback, resync, setup) came from a serial port."""


class CheckFailed(DecodeError):
    """A line whose check (``ck``) does not hold, or a line without one from a board whose lines carry it: bytes
    lost or lines run together on the way (the bridge counts it and asks for a snapshot)."""


def decode(line: bytes | None, accepts: frozenset[str] = FROM_BOARD, *, checked: bool = False) -> Message:
    """Return the message on one line from a board, or raise :class:`DecodeError`; a record whose type is not
    in ``accepts`` (what the port's kind of board may give) is :class:`OperatorRecordRefused`, a line whose
    check fails :class:`CheckFailed`. ``checked``: this board's lines carry a check (it sent one that held), so
    a line without one is refused too, unless it is a ``hello`` (the board restarted into older firmware)."""
    if line is None:
        raise DecodeError(f"line longer than {MAX_LINE} bytes dropped")
    check = check_line(line)
    if check is Check.BAD:
        raise CheckFailed("the line's check (ck) does not match its bytes: lost or spliced on the way")
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise DecodeError("not a JSON object")
    if check is Check.NONE and ("ck" in obj or (checked and obj.get("type") != "hello")):
        raise CheckFailed("a line without its check (ck) where the board's lines carry one: cut on the way")
    msg = _decode_object(obj, accepts)
    return replace(msg, checked=True) if check is Check.GOOD else msg


def _decode_object(obj: dict[str, Any], accepts: frozenset[str]) -> Message:
    seq = obj.get("seq")
    try:
        if seq is not None:
            seq = records.int_in_range(obj, "seq", 0, MAX_SEQ, "message counter")
        record = records.from_dict(obj)
    except records.RecordError as exc:
        raise DecodeError(exc.reason, out_of_range=isinstance(exc, records.OutOfRange)) from None
    kind = record.type
    if kind not in accepts and not isinstance(record, records.Other):
        raise OperatorRecordRefused(f"{kind!r} records come only from an operator (the MQTT set command), "
                                    "never from a board's port")
    fields = {k: v for k, v in obj.items() if k not in ("t", "type", "seq", "ck")}
    if isinstance(record, records.Other):
        if kind == "hello":
            board = obj.get("board")
            if not board_ids.is_board_id(board):
                raise BoardIdRefused(board)
            if obj.get("proto") != 1:
                raise DecodeError(f"unsupported protocol {obj.get('proto')!r} (this host speaks 1)")
            fw = obj.get("fw")
            if fw is not None and (not isinstance(fw, str) or len(fw) > MAX_FW or not fw.isprintable()
                                   or not fw.isascii()):
                raise DecodeError(f"'fw' must be printable ASCII of at most {MAX_FW} characters")
            fields["fw"] = fw
            boot = obj.get("boot", "")
            if type(boot) not in (str, int) or len(str(boot)) > MAX_BOOT:
                raise DecodeError(f"'boot' must be a string or integer of at most {MAX_BOOT} characters")
            fields["boot"] = str(boot)
            rate = obj.get("rate", 1)
            if type(rate) not in (int, float):
                raise DecodeError("'rate' (a simulation's device ms per real ms) must be a number")
            if not 1 <= rate <= MAX_RATE:
                raise DecodeError(f"'rate' {rate!r} out of range (1 to {MAX_RATE})", out_of_range=True)
            fields["rate"] = float(rate)
            return Message(None, kind, seq, record.t, fields)
        if kind == "button":
            button = obj.get("id")
            side = CLOCK_BUTTONS.get(button) if isinstance(button, str) else None
            if side is not None:
                return Message(records.Clock(record.t, side), "clock", seq, record.t, fields)
            return Message(None, kind, seq, record.t, fields)
        if not record.known:
            raise DecodeError(f"unknown message type {kind!r}")
        return Message(None, kind, seq, record.t, fields)
    return Message(record, kind, seq, record.t, fields)


#: Up to this many squares a ``leds`` command lists them by name; more go as a 64-bit mask (every square fits
#: in one command line: the firmware reads at most 256 bytes a line).
LEDS_BY_NAME = 8


def leds_command(squares: Iterable[str], color: Sequence[int]) -> dict[str, Any]:
    """Return the ``leds`` command lighting ``squares`` (names such as "e2") in ``color``."""
    names = list(dict.fromkeys(squares))
    if len(names) <= LEDS_BY_NAME:
        return {"cmd": "leds", "squares": names, "color": list(color)}
    mask = 0
    for name in names:
        mask |= 1 << chess.parse_square(name.lower())
    return {"cmd": "leds", "mask": f"{mask:016x}", "color": list(color)}


def encode_command(cmd: dict[str, Any]) -> bytes:
    """Return a host-to-board command as one NDJSON line."""
    return json.dumps(cmd, separators=(",", ":")).encode() + b"\n"


def _port_class() -> Any:
    import serial  # imported here so the pure parts work without pyserial

    class KeepInputSerial(serial.Serial):  # type: ignore[misc]
        """pyserial drops unread input when it opens a port; keep it: it is what the board said meanwhile."""

        def _reset_input_buffer(self) -> None:
            if getattr(self, "_opened_once", False):
                super()._reset_input_buffer()
            self._opened_once = True

    return KeepInputSerial


class SerialLink:
    """One open port delivering raw lines; :meth:`send` writes commands.

    On POSIX, given an event loop, the port's descriptor is watched by the loop itself (``add_reader``, epoll):
    no thread, so a thousand boards do not fight over the GIL. Elsewhere (Windows) a reader thread per port
    calls pyserial's ``read``. ``on_lines(link, lines)`` and ``on_closed(link, reason)`` are called in the loop
    or in the reader thread; the bridge passes the latter on to its loop.
    """

    #: The record types a line of this port may carry (:func:`decode`).
    accepts: frozenset[str] = FROM_BOARD

    def __init__(self, path: str, baudrate: int,
                 on_lines: Callable[[SerialLink, list[bytes | None]], None],
                 on_closed: Callable[[SerialLink, str], None]) -> None:
        self.path = path
        self.baudrate = baudrate
        self._on_lines = on_lines
        self._on_closed = on_closed
        self._serial: Any = None
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fd: int | None = None
        self._splitter = LineSplitter()
        self._finished = False
        self._resting: asyncio.TimerHandle | None = None   # a port that took too long a turn, resting
        self.checked = False             # the board's lines carry a check (one held): a line without is refused
        self.board: str | None = None    # set by the bridge once the board said hello
        self.held_back: str | None = None  # the id it said, served by another open port (the bridge waits)
        self.hello_asked = float("-inf")   # when the bridge last sent it a hello command (monotonic s)
        self.key = path                  # the device it was opened as (the owner's key)

    def open(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._serial = _port_class()(self.path, self.baudrate, timeout=0.5, write_timeout=1.0, exclusive=True)
        fd = getattr(self._serial, "fd", None)
        if loop is not None and os.name == "posix" and isinstance(fd, int):
            self._loop, self._fd = loop, fd
            loop.add_reader(fd, self._readable)
            return
        self._thread = threading.Thread(target=self._run, name=f"serial {self.path}", daemon=True)
        self._thread.start()

    @property
    def threaded(self) -> bool:
        return self._thread is not None

    def _readable(self) -> None:
        assert self._fd is not None
        try:
            data = os.read(self._fd, READ_PER_TURN)
        except BlockingIOError:
            return
        except OSError as exc:
            self._finish(f"port error: {exc}")
            return
        if not data:
            self._finish("port error: device disconnected (end of file)")
            return
        began = time.perf_counter()
        self._received(data)
        used = time.perf_counter() - began
        if len(data) == READ_PER_TURN and used > TURN_BUDGET_S and self._loop is not None and not self._finished:
            # a port with a backlog (it sends faster than it is read) and a turn dearer than a board's should be:
            # it rests (its bytes wait in it) so the others go on. A board that only has a slow turn is never held
            # back: a vendor board's reports are stamped when read, and a delay would bunch its changes.
            self._loop.remove_reader(self._fd)
            self._resting = self._loop.call_later(used * PORT_REST, self._rested)

    def _rested(self) -> None:
        self._resting = None
        if not self._finished and self._loop is not None and self._fd is not None:
            self._loop.add_reader(self._fd, self._readable)

    def _received(self, data: bytes) -> None:
        """Pass on the lines completed by ``data``, the bytes just read (a vendor's board link translates them)."""
        lines = self._splitter.feed(data)
        if lines:
            self._on_lines(self, lines)

    def _finish(self, reason: str) -> None:
        if self._finished:
            return
        self._finished = True
        if self._resting is not None:
            self._resting.cancel()
        if self._loop is not None and self._fd is not None:
            self._loop.remove_reader(self._fd)
        with contextlib.suppress(Exception):
            self._serial.close()
        self._on_closed(self, reason)

    def _chunks(self) -> Iterator[bytes]:
        """Yield what the port delivers until it fails or the link is closed.

        On POSIX the thread waits with ``poll`` on the port's file descriptor: pyserial's own ``read`` uses
        ``select``, which fails for descriptors above 1023, that is beyond about 500 boards in one process.
        """
        ser = self._serial
        fd = getattr(ser, "fd", None)
        if os.name != "posix" or not isinstance(fd, int):
            while not self._stop.is_set():
                yield ser.read(ser.in_waiting or 1)
            return
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        while not self._stop.is_set():
            events = poller.poll(500)
            if not events:
                continue
            try:
                data = os.read(fd, 4096)
            except BlockingIOError:
                continue
            if not data:
                raise OSError("device disconnected (end of file)")
            yield data

    def _run(self) -> None:
        splitter = LineSplitter()
        reason = "closed"
        ser = self._serial
        try:
            for data in self._chunks():
                if data:
                    lines = splitter.feed(data)
                    if lines:
                        self._on_lines(self, lines)
        except Exception as exc:
            reason = f"port error: {exc}"
        finally:
            try:
                ser.close()
            except Exception:
                log.debug("closing %s failed", self.path, exc_info=True)
            self._on_closed(self, reason if not self._stop.is_set() else "stopped")

    def send(self, cmd: dict[str, Any]) -> bool:
        """Write one command; return False (and close the link) when the port fails."""
        ser = self._serial
        if ser is None or self._stop.is_set():
            return False
        try:
            with self._write_lock:
                self._write(ser, encode_command(cmd))
            return True
        except Exception as exc:
            log.warning("%s: write failed (%s); closing", self.path, exc)
            self.close()
            return False

    @staticmethod
    def _write(ser: Any, data: bytes) -> None:
        fd = getattr(ser, "fd", None)
        if os.name != "posix" or not isinstance(fd, int):
            ser.write(data)
            return
        write_all(fd, data)

    def close(self) -> None:
        self._stop.set()
        if self._loop is not None:
            self._finish("stopped")
            return
        ser = self._serial
        if ser is not None:
            with contextlib.suppress(Exception):
                ser.cancel_read()

    def join(self, timeout: float = 2.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


def write_all(fd: int, data: bytes, within: float = 1.0) -> None:
    """Write all of ``data`` to the non-blocking ``fd``, waiting while it is full; raise :class:`TimeoutError` when
    the other end has not taken it all within ``within`` seconds (a board that does not read)."""
    view = memoryview(data)
    deadline = time.monotonic() + within
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TimeoutError("the board does not read what is sent to it") from None
            poller.poll(50)


def find_ports(patterns: Iterable[str], usb: Iterable[UsbMatch]) -> list[str]:
    """Return the port paths the configuration designates: paths and glob patterns, then USB matches."""
    found: list[str] = []
    seen: set[tuple[int, int]] = set()

    def add(path: str) -> None:
        try:
            st = os.stat(path)          # the device behind a symlink, in one system call
        except OSError:
            return
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            found.append(path)

    for pattern in patterns:
        for path in sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]:
            add(path)
    usb = list(usb)
    if usb:
        from serial.tools import list_ports

        for info in list_ports.comports():
            for m in usb:
                if ((m.vid is None or m.vid == info.vid) and (m.pid is None or m.pid == info.pid)
                        and (m.serial_number is None or m.serial_number == info.serial_number)):
                    add(info.device)
                    break
    return found
