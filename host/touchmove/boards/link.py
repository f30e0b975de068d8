"""A port that speaks a board vendor's protocol, seen by the bridge as one of touchmove's own boards.

:class:`BoardLink` is a :class:`touchmove.serial.link.SerialLink` whose bytes go through a translator
(:mod:`touchmove.boards.base`): the board's frames come out as wire protocol v1 lines, the bridge's commands go
in as the board's bytes, and a timer polls the board and releases what the adapter holds back. A serial port
(DGT, ChessLink) is opened with pyserial and the protocol's settings; a Linux ``/dev/hidraw*`` node (Chessnut)
is read and written as a file, one HID report a read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any

from touchmove.boards.base import Translator, encode_lines
from touchmove.clocks import SYSTEM_CLOCK, Clock
from touchmove.serial.lines import FROM_BOARD_ADAPTER
from touchmove.serial.link import SerialLink

log = logging.getLogger("touchmove.boards")

#: How often the translator's timers run (s).
TICK_S = 0.1


class RawFile:
    """A device node opened as a file (``/dev/hidraw*``): what :class:`SerialLink` needs of a port. :meth:`open`
    opens one; the constructor takes the descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def open(cls, path: str) -> RawFile:
        return cls(os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_NOCTTY))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def is_hidraw(path: str) -> bool:
    """Return True for a Linux hidraw node (a USB HID board read as a file)."""
    return os.path.basename(os.path.realpath(path)).startswith("hidraw")


class BoardLink(SerialLink):
    """One open port of a vendor's board, translated (see the module)."""

    accepts = FROM_BOARD_ADAPTER    # the adapter's own setup and result records, read from the pieces shown

    def __init__(self, path: str, translator: Translator,
                 on_lines: Callable[[SerialLink, list[bytes | None]], None],
                 on_closed: Callable[[SerialLink, str], None], clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(path, translator.baudrate, on_lines, on_closed)
        self.translator = translator
        self.clock = clock
        #: the shortest settle time the board's reports allow (the bridge's engine for it uses at least this)
        self.min_settle_ms = translator.min_settle_ms
        self._timer: asyncio.TimerHandle | None = None

    def now(self) -> int:
        """Return the host time stamp (ms, times the simulation rate) for what arrives now."""
        return int(self.clock.monotonic() * 1000 * self.translator.rate)

    def open(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if loop is None or os.name != "posix":
            raise OSError("board protocols need the bridge's event loop on a POSIX system")
        if is_hidraw(self.path):
            self._serial = RawFile.open(self.path)
        else:
            import serial

            tr = self.translator
            self._serial = serial.Serial(self.path, tr.baudrate, bytesize=tr.bytesize, parity=tr.parity,
                                         timeout=0, write_timeout=1.0, exclusive=True)
        self._loop, self._fd = loop, self._serial.fd
        loop.add_reader(self._serial.fd, self._readable)
        self._write_bytes(self.translator.start(self.now()))
        self._timer = loop.call_later(TICK_S, self._tick)

    def _received(self, data: bytes) -> None:
        lines = self.translator.feed(data, self.now())
        self._write_bytes(self.translator.drain())    # before the bridge answers the lines (order matters)
        if lines:
            self._on_lines(self, encode_lines(lines))

    def _tick(self) -> None:
        if self._finished:
            return
        try:
            lines, out = self.translator.tick(self.now())
            if lines:
                self._on_lines(self, encode_lines(lines))
            self._write_bytes(out + self.translator.drain())
        except Exception:
            log.exception("%s: the board's timer failed", self.path)
        if not self._finished and self._loop is not None:
            self._timer = self._loop.call_later(TICK_S, self._tick)

    def _finish(self, reason: str) -> None:
        if self._timer is not None:
            self._timer.cancel()
        super()._finish(reason)

    def send(self, cmd: dict[str, Any]) -> bool:
        """Translate one of the bridge's commands and write it; return False when the port fails."""
        return self._write_bytes(self.translator.command(cmd, self.now()))

    def _write_bytes(self, data: bytes) -> bool:
        if not data:
            return True
        ser = self._serial
        if ser is None or self._stop.is_set():
            return False
        try:
            with self._write_lock:
                self._write(ser, data)
            return True
        except Exception as exc:
            log.warning("%s: write failed (%s); closing", self.path, exc)
            self.close()
            return False
