"""``touchmove board-check PORT``: bring-up for someone wiring a board.

Asks the firmware for ``diag`` records a few times a second and shows a live 8 x 8 view of the raw sensor
bit per square (not debounced), with what looks wrong: a dead or flat shift-register chain, every square
occupied at once (pull-ups or ``active_low``), squares that flicker, squares that never changed while pieces
were walked over the board (stuck), a whole rank that never changes (a dead chip or row), sensor-bus errors,
a slow scan loop. Walk one piece over every square; the check lists what still has not been seen to change.

The analysis (:class:`BoardCheck`) is pure: it takes decoded device messages and answers with findings.
Exit status: 0 when nothing looks wrong, 1 when something does, 2 when the port cannot be used.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

FILES = "abcdefgh"
NOISY_TOGGLES = 6  # raw changes of one square within the check that the debounced state did not follow
#: The scan rate below which the loop is called slow: 90 % of each driver's default (config.py), 100 Hz for others.
MIN_SCAN_HZ = {"hc165": 180, "matrix": 110, "mcp23017": 180, "hall_mux": 45}


def square_name(sq: int) -> str:
    """Return "e2" for 12."""
    return FILES[sq & 7] + str((sq >> 3) + 1)


def occ_bits(hex_occ: str) -> int:
    """Return the occupancy bits of a snapshot-style hex string (a1 = bit 0)."""
    return int(hex_occ, 16)


@dataclass
class BoardCheck:
    """What the check has seen so far; feed() it decoded messages, then ask findings() and render()."""

    first_raw: int | None = None
    raw: int = 0                       # the latest raw occupancy (square order, not debounced)
    occ: int = 0                       # the latest debounced occupancy
    wiring: str = ""                   # the latest raw bytes in wiring order (hex)
    chain: str = "n/a"
    scan_hz: int = 0
    driver: str = ""
    scan_us: int = 0
    late_ms_max: int = 0
    bus_errors: int = 0
    dropped: int = 0
    diags: int = 0
    seen_on: int = 0                   # squares seen occupied at least once (raw or events)
    seen_off: int = 0                  # ... and empty at least once
    raw_toggles: list[int] = field(default_factory=lambda: [0] * 64)
    events: int = 0
    adc: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    board: str = ""

    def feed(self, msg: dict[str, Any]) -> None:
        """Take one device message (a decoded JSON object)."""
        kind = msg.get("type")
        if kind == "hello":
            self.board = str(msg.get("board", ""))
        elif kind in ("snapshot", "heartbeat") and isinstance(msg.get("occ"), str):
            self.occ = occ_bits(msg["occ"])
            self._seen(self.occ)
        elif kind in ("lift", "place") and isinstance(msg.get("sq"), str):
            self.events += 1
            name = msg["sq"]
            sq = FILES.index(name[0]) + 8 * (int(name[1]) - 1)
            if kind == "place":
                self.occ |= 1 << sq
            else:
                self.occ &= ~(1 << sq)
            self._seen(self.occ)
        elif kind == "error" and isinstance(msg.get("why"), str):
            self.errors.append(msg["why"])
        elif kind == "diag" and msg.get("part") == "scan":
            self._diag(msg)
        elif kind == "diag" and msg.get("part") == "adc":
            base = int(msg.get("from", 0))
            for i, v in enumerate(msg.get("v", [])):
                self.adc[base + i] = int(v)

    def _diag(self, msg: dict[str, Any]) -> None:
        raw = occ_bits(msg["now"])
        if self.first_raw is None:
            self.first_raw = raw
        else:
            changed = raw ^ self.raw
            for sq in range(64):
                if changed >> sq & 1:
                    self.raw_toggles[sq] += 1
        self.raw = raw
        self.occ = occ_bits(msg.get("occ", msg["now"]))
        self.wiring = str(msg.get("raw", ""))
        self._seen(raw)
        self.chain = str(msg.get("chain", "n/a"))
        self.scan_hz = int(msg.get("scan_hz", 0))
        self.driver = str(msg.get("driver", ""))
        self.scan_us = int(msg.get("scan_us", 0))
        self.late_ms_max = max(self.late_ms_max, int(msg.get("late_ms_max", 0)))
        self.bus_errors = int(msg.get("bus_errors", 0))
        self.dropped = int(msg.get("dropped", 0))
        self.diags += 1

    def _seen(self, bits: int) -> None:
        self.seen_on |= bits
        self.seen_off |= ~bits & (2**64 - 1)

    def stuck(self) -> list[int]:
        """Squares not yet seen both occupied and empty (meaningful once pieces have been walked)."""
        both = self.seen_on & self.seen_off
        return [sq for sq in range(64) if not both >> sq & 1]

    def noisy(self) -> list[int]:
        return [sq for sq in range(64) if self.raw_toggles[sq] >= NOISY_TOGGLES]

    def findings(self) -> list[str]:
        """What looks wrong, one sentence each (empty: nothing)."""
        out: list[str] = []
        if self.diags == 0:
            return ["no diag record from the board: is it touchmove firmware 0.1 or later, on this port?"]
        if self.chain == "dead":
            out.append("shift-register chain dead: the byte after the 64 inputs is not 0x00. Check the data "
                       "wire to the MCU (QH of chip 0), every chip's QH -> next chip's SER, and that the last "
                       "chip's SER is tied to GND.")
        elif self.chain == "flat":
            out.append("shift-register chain flat: all 72 bits read the same. Check CLK and SH/LD to every "
                       "chip, and 3.3 V / GND on each.")
        if self.first_raw == 2**64 - 1 and self.raw == 2**64 - 1:
            out.append("every square reads occupied: pull-ups missing, or the profile's active_low is wrong "
                       "for this wiring.")
        for rank in range(8):
            mask = 0xFF << (8 * rank)
            changed = (self.seen_on & self.seen_off) & mask
            others_changed = (self.seen_on & self.seen_off) & ~mask
            if not changed and others_changed.bit_count() >= 8:
                level = "occupied" if self.raw & mask == mask else "empty" if not self.raw & mask else "mixed"
                out.append(f"rank {rank + 1} never changed while others did (reads {level}): check its chip "
                           f"or row wire.")
        noisy = self.noisy()
        if noisy:
            names = ", ".join(f"{square_name(s)} ({self.raw_toggles[s]}x)" for s in noisy)
            out.append(f"flickering raw readings: {names}. A loose contact, a magnet at the edge of the "
                       f"switch's range, or a long unshielded wire.")
        if self.events or self.diags > 3:
            stuck = self.stuck()
            if stuck and len(stuck) < 64 and (self.seen_on & self.seen_off):
                out.append("not seen to change yet (walk a piece over them; if they stay, they are stuck): "
                           + " ".join(square_name(s) for s in stuck))
        if self.bus_errors:
            out.append(f"sensor bus errors: {self.bus_errors} (I2C wiring, pull-ups, addresses).")
        least = MIN_SCAN_HZ.get(self.driver, 100)
        if self.scan_hz and self.scan_hz < least:
            out.append(f"slow scan loop: {self.scan_hz} Hz (wanted >= {least} for {self.driver or 'this driver'}).")
        if self.dropped:
            out.append(f"{self.dropped} events dropped by the firmware (the host did not read fast enough).")
        out.extend(f"board error: {why}" for why in self.errors[-3:])
        return out

    def render(self) -> str:
        """The 8 x 8 view, rank 8 on top: # occupied, . empty, ! flickering, ? never seen to change."""
        noisy = set(self.noisy())
        stuck = set(self.stuck()) if self.events or self.diags > 3 else set()
        lines = []
        for rank in range(7, -1, -1):
            cells = []
            for f in range(8):
                sq = 8 * rank + f
                mark = "#" if self.raw >> sq & 1 else "."
                if sq in noisy:
                    mark = "!"
                elif sq in stuck and (self.seen_on & self.seen_off):
                    mark = "?" if mark == "." else "@"
                cells.append(mark)
            lines.append(f"{rank + 1} " + " ".join(cells))
        lines.append("  " + " ".join(FILES))
        lines.append(f"chain {self.chain}  scan {self.scan_hz} Hz, {self.scan_us} us a scan, jitter "
                     f"{self.late_ms_max} ms  raw(wiring) {self.wiring}")
        return "\n".join(lines)


def _read_messages(buf: bytearray) -> list[dict[str, Any]]:
    out = []
    while b"\n" in buf:
        i = buf.index(b"\n")
        line = bytes(buf[:i]).strip()
        del buf[: i + 1]
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue                 # a cut line at the start: ignore
        if isinstance(obj, dict):
            out.append(obj)
    return out


def check(port: str, seconds: float, interval: float = 0.25, out: TextIO = sys.stdout,
          live: bool = False) -> BoardCheck:
    """Talk to the board on ``port`` for ``seconds`` and return what was seen (raises OSError)."""
    import serial  # pyserial

    bc = BoardCheck()
    buf = bytearray()
    with serial.Serial(port, 115200, timeout=0.05) as ser:
        ser.write(b'{"cmd":"hello"}\n')
        end = time.monotonic() + seconds
        next_diag = 0.0
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_diag:
                ser.write(b'{"cmd":"diag"}\n')
                next_diag = now + interval
                if live:
                    out.write("\x1b[H\x1b[2J" + bc.render() + "\n\n" + "\n".join(bc.findings()) + "\n")
                    out.flush()
            buf += ser.read(4096)
            for msg in _read_messages(buf):
                bc.feed(msg)
        buf += ser.read(4096)
        for msg in _read_messages(buf):
            bc.feed(msg)
    return bc


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("port", help="the board's serial port (e.g. /dev/ttyACM0)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to watch (default 60)")
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between diag requests")
    parser.set_defaults(handler=_main)


def _main(args: argparse.Namespace) -> int:
    live = sys.stdout.isatty()
    try:
        bc = check(args.port, args.seconds, args.interval, sys.stdout, live)
    except (OSError, ValueError) as exc:     # serial.SerialException is an OSError
        from touchmove.bridge.port_report import diagnose

        reason, fix = diagnose(args.port, exc)
        print(f"touchmove board-check: cannot use {args.port}: {reason} -> {fix}", file=sys.stderr)
        return 2
    problems = bc.findings()
    print(bc.render())
    print()
    if problems:
        print("\n".join(f"- {p}" for p in problems))
        return 1
    print("nothing looks wrong")
    return 0
