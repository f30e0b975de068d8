"""A vendor's board asked who it is, in its own protocol, as ``touchmove run`` will ask it (``touchmove doctor``).

:func:`ask` opens the port with the protocol's settings (DGT 9600 8N1, ChessLink 38400 7O1, a Chessnut
``/dev/hidraw*`` node as a file), sends what the bridge sends when it opens the port and reads until the
protocol's translator says ``hello`` (the board's id, its serial number or version). Nothing else is sent: the
board is not switched to update mode, its move memory is not read.
"""

from __future__ import annotations

import contextlib
import os
import select
import termios
import time
from dataclasses import dataclass
from typing import Any

from touchmove.boards import translator_for
from touchmove.boards.link import RawFile, is_hidraw
from touchmove.serial.link import read_ready, write_all
from touchmove.serial.refusals import diagnose

#: What the bridge's translators say about a board in their hello, named for the operator.
_FIELDS = (("serial", "serial number"), ("version", "version"), ("battery", "battery"))


@dataclass(frozen=True)
class Answer:
    """What :func:`ask` found: ``level`` ok / warn / FAIL, what the operator reads, the fix (may be empty)."""

    level: str
    what: str
    fix: str = ""
    board: str | None = None


def settings(protocol: str) -> str:
    """Return the serial settings of ``protocol`` as an operator reads them (``9600 8N1``)."""
    tr = translator_for(protocol, "-")
    return "USB HID" if protocol == "chessnut" else f"{tr.baudrate} {tr.bytesize}{tr.parity}1"


def ask(path: str, protocol: str, timeout: float) -> Answer:
    """Return whether the board on ``path`` answers in ``protocol`` within ``timeout`` seconds."""
    tr = translator_for(protocol, path)
    before = _termios_of(path)
    try:
        if is_hidraw(path):
            port: Any = RawFile.open(path)
        else:
            import serial

            port = serial.Serial(path, tr.baudrate, bytesize=tr.bytesize, parity=tr.parity, timeout=0,
                                 write_timeout=1.0, exclusive=True)
    except Exception as exc:
        reason, fix = diagnose(path, exc)
        _restore(before)
        if reason.startswith("locked by another program") and "touchmove" in reason and " run" in reason:
            return Answer("ok", f"held by a running bridge ({reason.split('(', 1)[-1].rstrip(')')}): not asked")
        return Answer("FAIL", f"cannot open: {reason}", fix)
    fd = int(port.fd)
    heard = 0
    try:
        write_all(fd, tr.start(_now()))
        deadline = time.monotonic() + timeout
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while time.monotonic() < deadline:
            data = read_ready(poller, fd, 100)
            if data is None:
                continue
            if not data:
                break
            heard += len(data)
            for line in tr.feed(data, _now()):
                if line.get("type") == "hello":
                    extra = ", ".join(f"{name} {line[key]}" for key, name in _FIELDS if line.get(key) is not None)
                    return Answer("ok", f"{protocol} board {line['board']} answers ({settings(protocol)}"
                                        + (f", {extra}" if extra else "") + ")", board=str(line["board"]))
            tr.outbox.clear()       # what a reply asks for (update mode, the move memory): not for a check
    except OSError as exc:
        return Answer("warn", f"opened, then failed: {' '.join(str(exc).split())}",
                      "unplug and plug the board in again; check the cable")
    finally:
        port.close()
        _restore(before)
    if heard:
        return Answer("warn", f"{heard} byte(s), but no {protocol} answer in {timeout:g} s",
                      "another board or protocol on this port: fix `protocol` in [serial] boards (docs/boards.md)")
    return Answer("warn", f"nothing received in {timeout:g} s at {settings(protocol)}",
                  "switch the board on (a Chessnut runs on its battery) and check the cable; check that it is "
                  "this protocol's board (docs/boards.md)")


def _termios_of(path: str) -> tuple[int, list[Any]] | None:
    """Return an open descriptor of the serial port ``path`` and its settings before the check (None for a
    hidraw node or when they cannot be read): the check gives them back, so that ``run`` opens the port as it
    would have without it (a pseudo-terminal left at 7O1 refuses pyserial's 7O1 settings a second time)."""
    if is_hidraw(path):
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return fd, termios.tcgetattr(fd)
    except termios.error:
        os.close(fd)
        return None


def _restore(before: tuple[int, list[Any]] | None) -> None:
    if before is None:
        return
    fd, attrs = before
    with contextlib.suppress(termios.error, OSError):
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
    os.close(fd)


def _now() -> int:
    return int(time.monotonic() * 1000)
