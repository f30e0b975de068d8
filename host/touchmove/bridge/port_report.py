"""What the bridge watches and what it found, said to the operator: ports opened or refused (with the reason
and the fix), ports that stay silent, boards bound; and ``touchmove doctor --ports``, which lists the serial
devices with their USB ids and whether a board answers on each.

:class:`PortReport` is told by :mod:`touchmove.bridge.ports` what happens and logs each news once (at INFO or
WARNING, so the default log level shows it); :mod:`touchmove.serial.refusals` says why a port is refused.
"""

from __future__ import annotations

import errno
import glob
import json
import logging
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

# why a port is refused, with the fix (re-exported: the refusals are said here and by doctor)
from touchmove.serial.refusals import diagnose as diagnose
from touchmove.serial.refusals import lock_holder as lock_holder
from touchmove.serial.refusals import modem_manager_running as modem_manager_running

if TYPE_CHECKING:
    from touchmove.config import BoardPort, SerialConfig, UsbMatch

log = logging.getLogger("touchmove.bridge")

#: Seconds a port may stay open without a line from it before the operator is told the board is silent.
SILENT_AFTER_S = 5.0
#: A port another program keeps locked is said again this often (a held port is not news once).
STILL_LOCKED_S = 60.0
#: USB ids of the boards the firmware runs on (MicroPython's own ids), named for the operator.
KNOWN_USB_IDS = {
    (0x2E8A, 0x0005): "Raspberry Pi Pico / Pico W (MicroPython)",
    (0x303A, 0x4001): "ESP32-S3 (MicroPython, native USB)",
    (0x303A, 0x1001): "ESP32-S3 (USB Serial/JTAG)",
}
#: Vendor boards' USB vendor ids, as far as they are known (docs/boards.md#usb-ids): Chessnut's from its SDK.
VENDOR_BOARD_VIDS = {0x2D80: ("chessnut", "Chessnut Air / Pro (USB HID)")}
#: USB serial chips' vendor ids (Linux's ftdi_sio, cp210x, pl2303, ch341 drivers): a DGT or ChessLink board
#: on USB is one of these (which one is not verified on a real board: docs/boards.md#usb-ids).
SERIAL_CHIP_VIDS = {0x0403: "FTDI", 0x10C4: "Silicon Labs CP210x", 0x067B: "Prolific PL2303", 0x1A86: "WCH CH340"}
SILENT_FIX = ("no line from the board: it runs other firmware or none (flash touchmove's: make flash, "
              "docs/firmware.md), the baud rate differs ([serial] baudrate), or it is not a board")
GARBLED_FIX = ("lines that are not touchmove's: other firmware on the board (flash touchmove's: make flash) "
               "or a wrong baud rate ([serial] baudrate)")


def usb_id(vid: int | None, pid: int | None) -> str:
    """Return ``vvvv:pppp`` (lower-case hex) or ``-`` when the device has no USB id."""
    return f"{vid:04x}:{pid:04x}" if vid is not None and pid is not None else "-"


def describe_watch(patterns: Sequence[str], usb: Sequence[UsbMatch], baudrate: int | None = None,
                   boards: Sequence[BoardPort] = ()) -> str:
    """Return one line saying which paths and USB ids the bridge looks for boards at (touchmove's own at
    ``baudrate`` when given, then each ``[serial] boards`` entry with its protocol)."""
    parts = [f"paths {', '.join(patterns)}"] if patterns else []
    if usb:
        ids = []
        for m in usb:
            vid = f"{m.vid:04x}" if m.vid is not None else "*"
            pid = f"{m.pid:04x}" if m.pid is not None else "*"
            ids.append(f"{vid}:{pid}" + (f" serial {m.serial_number}" if m.serial_number else ""))
        parts.append(f"USB ids {', '.join(ids)}")
    if parts and baudrate is not None:
        parts[-1] += f" (baud {baudrate})"
    for entry in boards:
        parts.append(f"{entry.protocol} boards at {describe_entry(entry)}")
    return " and ".join(parts) if parts else ("nothing (no [serial] ports, usb or boards in the configuration)")


def describe_entry(entry: BoardPort) -> str:
    """Return where a ``[serial] boards`` entry finds its boards: its path or glob, or its USB ids."""
    if entry.port is not None:
        return entry.port
    vid = f"{entry.vid:04x}" if entry.vid is not None else "*"
    pid = f"{entry.pid:04x}" if entry.pid is not None else "*"
    return f"USB id {vid}:{pid}"


@dataclass(frozen=True)
class SerialDevice:
    """A serial device of this host: its path, USB id (None when not USB), serial number and description."""

    path: str
    vid: int | None = None
    pid: int | None = None
    serial_number: str | None = None
    description: str = ""

    def label(self) -> str:
        """Return ``path (vvvv:pppp, what it is)`` for the operator."""
        known = KNOWN_USB_IDS.get((self.vid or -1, self.pid or -1))
        if known is None and self.vid in VENDOR_BOARD_VIDS:
            known = VENDOR_BOARD_VIDS[self.vid][1]
        elif known is None and self.vid in SERIAL_CHIP_VIDS:
            known = f"{SERIAL_CHIP_VIDS[self.vid]} USB serial adapter" + (
                f", {self.description}" if self.description and self.description != "n/a" else "")
        what = known or self.description
        return f"{self.path} ({usb_id(self.vid, self.pid)}{', ' + what if what and what != 'n/a' else ''})"


def serial_devices(extra: Iterable[str] = ()) -> list[SerialDevice]:
    """Return the host's serial devices (pyserial's list) and the ``extra`` paths or patterns that exist."""
    from serial.tools import list_ports

    found: dict[str, SerialDevice] = {}
    for info in list_ports.comports():
        found[info.device] = SerialDevice(info.device, info.vid, info.pid, info.serial_number,
                                          info.description or "")
    for pattern in extra:
        for path in sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]:
            real = os.path.realpath(path)
            if os.path.exists(path) and path not in found and not any(
                    os.path.realpath(d) == real for d in found):
                found[path] = SerialDevice(path)
    return sorted(found.values(), key=lambda d: d.path)


class Clock(Protocol):
    def __call__(self) -> float: ...


class PortReport:
    """Logs, once per news, what the bridge's serial side watches and finds (see the module's docstring)."""

    def __init__(self, patterns: Sequence[str], usb: Sequence[UsbMatch], baudrate: int,
                 clock: Clock = time.monotonic, boards: Sequence[BoardPort] = ()) -> None:
        self.patterns = patterns
        self.usb = usb
        self.baudrate = baudrate
        self.boards = boards
        self.clock = clock
        self.refused: dict[str, str] = {}           # path -> the reason last logged
        self.refused_since: dict[str, float] = {}   # path -> when it was first refused for that reason
        self.refused_told: dict[str, float] = {}    # path -> when that was last said
        self.opened_at: dict[str, float] = {}       # path -> when it opened, until it sent a line
        self.garbled: dict[str, int] = {}            # path -> lines that were not touchmove's, before a hello
        self.silent_told: set[str] = set()
        self.last_found: tuple[str, ...] | None = None

    def started(self) -> None:
        """Say what the bridge looks for boards at (once, at start)."""
        log.info("watching for boards at %s", self.watched(self.baudrate))

    def watched(self, baudrate: int | None = None) -> str:
        """Return what the bridge watches, in one line."""
        return describe_watch(self.patterns, self.usb, baudrate, self.boards)

    def scanned(self, found: Sequence[str]) -> None:
        """After a scan: say what matched when it changed (and, when nothing does, what is plugged in)."""
        for path in self.patterns:
            if not glob.has_magic(path) and path not in found and self.refused.get(path) != "no such device":
                self.refused_port(path, FileNotFoundError(errno.ENOENT, "No such file or directory", path))
        now = tuple(found)
        if now == self.last_found:
            return
        self.last_found = now
        if found:
            log.info("ports matching: %s", ", ".join(found))
            return
        try:
            devices = serial_devices()
        except Exception:     # pyserial's listing is a convenience here
            devices = []
        plugged = ", ".join(d.label() for d in devices) or "none"
        log.warning("no port matches %s; serial devices on this host: %s", self.watched(), plugged)

    def refused_port(self, path: str, exc: BaseException) -> None:
        """Say why ``path`` could not be opened and the fix (once per reason, until it opens; a port another
        program keeps locked is said again every :data:`STILL_LOCKED_S`, with how long)."""
        reason, fix = diagnose(path, exc)
        now = self.clock()
        if self.refused.get(path) == reason:
            since = self.refused_since.get(path, now)
            if reason.startswith("locked") and now - self.refused_told.get(path, now) >= STILL_LOCKED_S:
                self.refused_told[path] = now
                log.warning("port %s still refused after %.0f s: %s -> %s", path, now - since, reason, fix)
            return
        self.refused[path] = reason
        self.refused_since[path] = self.refused_told[path] = now
        log.warning("port %s refused: %s -> %s", path, reason, fix)

    def opened(self, path: str) -> None:
        """Note ``path`` open: its silence is timed from now (and say so when it was refused before)."""
        was = self.refused.pop(path, None)
        if was is not None and was != "no such device":
            log.warning("port %s: got it back (it was refused: %s)", path, was)
        self.opened_at[path] = self.clock()
        self.silent_told.discard(path)
        self.garbled.pop(path, None)

    def line(self, path: str, touchmove: bool) -> None:
        """A line came from ``path``; ``touchmove`` says whether it decoded as the firmware's."""
        self.opened_at.pop(path, None)
        if touchmove:
            self.garbled.pop(path, None)
            return
        count = self.garbled.get(path, 0) + 1
        self.garbled[path] = count
        if count == 3:
            log.warning("port %s: %s", path, GARBLED_FIX)

    def bound(self, path: str, board: str) -> None:
        """Say that ``board`` said hello on ``path``."""
        self.garbled.pop(path, None)
        log.info("port %s: board %s bound", path, board)

    def closed(self, path: str) -> None:
        """Forget ``path``'s silence (it is said again if it reopens and stays silent)."""
        self.opened_at.pop(path, None)
        self.silent_told.discard(path)

    def check_silent(self) -> list[str]:
        """Log the ports open for :data:`SILENT_AFTER_S` without a line (once each); return them."""
        now = self.clock()
        silent = [p for p, t in self.opened_at.items() if now - t >= SILENT_AFTER_S and p not in self.silent_told]
        for path in silent:
            self.silent_told.add(path)
            log.warning("port %s: open for %.0f s, nothing received -> %s", path, SILENT_AFTER_S, SILENT_FIX)
        return silent


# -- touchmove doctor --ports ------------------------------------------------------------------------------------

def probe(path: str, baudrate: int, timeout: float) -> tuple[str, str]:
    """Open ``path``, ask for ``hello`` and return (level, what answered): ``ok`` with the board's id,
    ``warn`` for silence or foreign lines, ``FAIL`` when the port cannot be opened (with the fix)."""
    import serial

    try:
        port = serial.Serial(path, baudrate, timeout=0.2, write_timeout=1.0, exclusive=True)
    except Exception as exc:
        reason, fix = diagnose(path, exc)
        return "FAIL", f"cannot open: {reason} -> {fix}"
    lines: list[bytes] = []
    try:
        port.write(b'{"cmd":"hello"}\n')
        deadline = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < deadline:
            buf += port.read(4096)
            *complete, buf = buf.split(b"\n")
            lines += [c.strip() for c in complete if c.strip()]
            for line in lines:
                hello = _hello(line)
                if hello is not None:
                    return "ok", (f"touchmove board {hello.get('board')} answers (firmware "
                                  f"{hello.get('fw', '?')}, protocol {hello.get('proto', '?')})")
    except Exception as exc:
        return "warn", f"opened, then failed: {' '.join(str(exc).split())}"
    finally:
        port.close()
    if lines:
        return "warn", f"{len(lines)} line(s), none touchmove's -> {GARBLED_FIX}"
    return "warn", f"nothing received in {timeout:g} s -> {SILENT_FIX}"


def _hello(line: bytes) -> dict[str, object] | None:
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and obj.get("type") == "hello" and "board" in obj else None


class DoctorReport(Protocol):
    def ok(self, what: str) -> None: ...
    def warn(self, what: str, fix: str) -> None: ...
    def fail(self, what: str, fix: str) -> None: ...


def hid_boards(entries: Sequence[BoardPort] = ()) -> list[SerialDevice]:
    """Return the ``/dev/hidraw*`` nodes of vendor boards: a known board's vendor id, or an entry's ids."""
    from touchmove import boards

    out = []
    for path in sorted(glob.glob("/dev/hidraw*")):
        ids = boards.usb_ids_of(path)
        if ids is None:
            continue
        wanted = ids[0] in VENDOR_BOARD_VIDS or any(
            e.port is None and e.vid in (None, ids[0]) and e.pid in (None, ids[1]) for e in entries)
        if wanted:
            out.append(SerialDevice(path, ids[0], ids[1], None, "USB HID"))
    return out


def _report(report: DoctorReport, level: str, what: str, fix: str) -> None:
    if level == "ok":
        report.ok(what)
    elif level == "warn":
        report.warn(what, fix)
    else:
        report.fail(what, fix)


def doctor_ports(report: DoctorReport, config_path: Path | None, timeout: float) -> None:
    """``touchmove doctor --ports``: one line per serial device with its USB id and whether a board answers,
    each in the protocol it is configured for (``[serial] boards``) or recognised by (a Chessnut's vendor id);
    an unconfigured USB serial adapter that is silent to touchmove's hello is asked as a DGT and a ChessLink
    board too."""
    from touchmove import boards
    from touchmove.boards.probe import ask

    serial_cfg: SerialConfig | None = None
    if config_path is not None:
        from touchmove.config import ConfigError, load

        try:
            serial_cfg = load(config_path).serial
        except (ConfigError, OSError):
            serial_cfg = None        # the configuration's own check says why
    patterns: Sequence[str] = serial_cfg.ports if serial_cfg else ()
    baudrate = serial_cfg.baudrate if serial_cfg else 115200
    entries = serial_cfg.boards if serial_cfg else ()
    vendor_paths = [e.port for e in entries if e.port is not None]
    devices = serial_devices([*patterns, *vendor_paths]) + hid_boards(entries)
    if not devices:
        report.warn("ports: no serial device on this host",
                    "plug a board in (a data cable, not a charge-only one); `dmesg | tail` shows what the "
                    "kernel saw")
        return
    configured = {p for pattern in [*patterns, *vendor_paths]
                  for p in (glob.glob(pattern) if glob.has_magic(pattern) else [pattern])}
    for device in devices:
        entry = boards.board_port_of(device.path, serial_cfg) if serial_cfg is not None else None
        protocol = entry.protocol if entry is not None else VENDOR_BOARD_VIDS.get(device.vid or -1, ("",))[0]
        if protocol:
            answer = ask(device.path, protocol, timeout)
            _report(report, answer.level, f"port {device.label()}: {answer.what}", answer.fix)
            continue
        if device.vid is None and device.path not in configured:
            # a built-in serial port (ttyS*) or another adapter: nothing is written to it unasked
            report.ok(f"port {device.label()}: not USB, not probed (name it in [serial] ports to probe it)")
            continue
        level, what = probe(device.path, baudrate, timeout)
        if level == "warn" and device.vid in SERIAL_CHIP_VIDS:
            for other in ("dgt", "chesslink"):
                answer = ask(device.path, other, min(timeout, 1.5))
                if answer.level == "ok":
                    report.warn(f"port {device.label()}: {answer.what}",
                                f'not in the configuration: add {{ port = "{device.path}", protocol = "{other}" }} '
                                "to [serial] boards (docs/boards.md)")
                    break
            else:
                _report(report, level, f"port {device.label()}: {what.split(' -> ')[0]}",
                        what.split(" -> ")[1] if " -> " in what else "")
            continue
        _report(report, level, f"port {device.label()}: {what.split(' -> ')[0]}",
                what.split(" -> ")[1] if " -> " in what else "")
