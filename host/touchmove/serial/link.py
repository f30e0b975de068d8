"""A board's serial port: one link per port, delivering its lines (:mod:`touchmove.serial.lines` decodes them)
and writing commands (:mod:`touchmove.serial.commands`).

Serial library: pyserial (3.5) with one reader thread per port handing whole lines to the asyncio loop with
``call_soon_threadsafe``. pyserial is the de-facto standard, works the same on USB CDC devices, UARTs and
pseudo-terminals (the demo and the tests), on Linux, macOS and Windows, and its ``list_ports`` finds boards
by USB VID/PID/serial number. A blocking read in a thread gives the lowest latency for little CPU (the thread
sleeps in ``select``), and a port error stays inside its thread. ``pyserial-asyncio`` is unmaintained;
``pyserial-asyncio-fast`` only wraps the same pyserial objects in ``add_reader`` (POSIX only), which saves
a thread per board but not work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from touchmove.serial.commands import encode_command
from touchmove.serial.lines import FROM_BOARD, LineSplitter

log = logging.getLogger(__name__)

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
            data = read_ready(poller, fd, 500)
            if data is None:
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


def read_ready(poller: select.poll, fd: int, timeout_ms: int) -> bytes | None:
    """Return what ``fd`` (registered with ``poller``) has within ``timeout_ms``: None when nothing came (or the
    read would block after all), ``b""`` at the end of the file (the device is gone)."""
    if not poller.poll(timeout_ms):
        return None
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return None


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
