"""Figures of one driver on the emulated Pico, for bench/firmware_scan.py (a benchmark, not a test).

A host on the pty (no bridge): the board boots with the starting position on it; a magnet is moved on and off
squares every 200 ms (each change's emulated time is known to the emulator); ``diag`` gives the firmware's own
scan time and rate; the heap is read from RAM.
"""

from __future__ import annotations

import json
import os
import select
import statistics
import time
from pathlib import Path
from typing import Any

import chess

from tests.pico.emulator import EmulatedPico, FlashCache

SQUARES = [chess.E4, chess.D5, chess.C3, chess.F6]
#: the rate asked for to find the highest one a driver sustains (the firmware's diag says what it reached); the
#: firmware refuses rates above its MAX_SCAN_HZ for the driver, so no more than that is asked
FAST_HZ = 500


def fast_hz(driver: str) -> int:
    """FAST_HZ, or the firmware's own limit for the driver when that is lower."""
    import importlib.util

    from tests.pico.emulator import REPO

    spec = importlib.util.spec_from_file_location("fw_config", REPO / "firmware" / "touchmove_fw" / "config.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    limit = getattr(mod, "MAX_SCAN_HZ", {}).get(driver, FAST_HZ)
    return int(min(FAST_HZ, limit))


class Host:
    """The pty opened as a host would (raw), reading lines and sending commands."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(str(path), os.O_RDWR | os.O_NOCTTY)
        self.buf = b""

    def send(self, cmd: dict[str, Any]) -> None:
        os.write(self.fd, json.dumps(cmd).encode() + b"\n")

    def drain(self) -> None:
        while select.select([self.fd], [], [], 0)[0]:
            self.buf += os.read(self.fd, 65536)

    def wait(self, kind: str, timeout: float, part: str | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("type") == kind and (part is None or rec.get("part") == part):
                    return dict(rec)
            if select.select([self.fd], [], [], 0.2)[0]:
                self.buf += os.read(self.fd, 65536)
        raise TimeoutError(f"no {kind} record in {timeout} s")

    def close(self) -> None:
        os.close(self.fd)


#: The host takes nothing from the board for this long (emulated ms) in the middle of the first run: the longest
#: scan gap then (the scans counted at the sensor pins) is what a host that stops reading costs the scan.
HOLD_MS = 3000


def run_board(flashes: FlashCache, driver: str, board_json: dict[str, Any] | None, tmp: Path,
              changes: int, hold: bool = False) -> tuple[EmulatedPico, dict[str, Any], list[dict[str, Any]]]:
    """Boot, move a magnet ``changes`` times (200 ms apart), ask for diag at the end; returns the board (still
    running), the diag record and heap samples. ``hold``: the host reads nothing for HOLD_MS from 1 s in, and
    the scans seen at the pins are counted while it reads (from then to the hold) and while it does not (the
    ``scans`` events, marks "reading" and "not reading")."""
    link = tmp / f"tty-{driver}-{len(list(tmp.iterdir()))}"
    pico = EmulatedPico(flashes.board(board_json), link, driver, occ=chess.Board().occupied).start()
    pico.wait(lambda e: e.get("ev") == "usb", 300, "USB")
    host = Host(link)
    host.send({"cmd": "hello"})
    host.wait("hello", 300)
    occ = chess.Board().occupied
    tl: list[dict[str, Any]] = []
    for k in range(changes):
        occ ^= chess.BB_SQUARES[SQUARES[(k // 2) % len(SQUARES)]]
        tl.append({"t": 300 + 200 * k, "occ": f"{occ:016x}"})
    if hold:
        tl += [{"t": 1000, "scans": "reset"}, {"t": 2999, "scans": "reading"}, {"t": 3000, "scans": "reset"},
               {"t": 3000, "hold": HOLD_MS}, {"t": 3000 + HOLD_MS, "scans": "not reading"}]
        tl.sort(key=lambda e: e["t"])
    i = pico.play(tl)
    heap = []
    while True:
        hid = pico.send("heap")
        heap.append(pico.wait(lambda e, hid=hid: e.get("ev") == "heap" and e.get("id") == hid, 300, "heap"))
        host.drain()
        if any(e.get("ev") == "timeline_done" and e.get("id") == i for e in pico.events):
            break
        time.sleep(1.0)
    host.send({"cmd": "diag"})
    diag = host.wait("diag", 300, "scan")
    host.close()
    return pico, diag, heap


def latencies_ms(pico: EmulatedPico) -> list[float]:
    """Emulated ms from each square change at the pins to the end of the USB line that reports it, for the
    changes made while the host reads (none from the start of a USB hold to 1 s after its end: those wait for
    the host, or are dropped for a snapshot)."""
    holds = [(h["until_us"] - HOLD_MS * 1000, h["until_us"] + 1_000_000) for h in pico.of("usb_hold")]
    changes = [c for c in pico.of("change") if not any(a <= c["us"] <= b for a, b in holds)]
    lines = [(e["us"], json.loads(e["text"])) for e in pico.of("line") if e["text"].startswith("{")]
    out = []
    for ch in changes:
        kind = "place" if ch["on"] else "lift"
        name = chess.square_name(ch["sq"])
        for us, rec in lines:
            if us >= ch["us"] and rec.get("type") == kind and rec.get("sq") == name:
                out.append((us - ch["us"]) / 1000)
                break
    return out


def measure_driver(flashes: FlashCache, driver: str, tmp: Path) -> dict[str, Any]:
    """scan_us / scan_us_max / scan_hz at the default rate, the rate reached when asked for FAST_HZ, the heap and
    the latency."""
    profile = None if driver == "hc165" else {"profile": driver}
    pico, diag, heap = run_board(flashes, driver, profile, tmp, changes=40, hold=True)
    gaps = {e["mark"]: e for e in pico.of("scans") if e.get("mark") in ("reading", "not reading")}
    lat = latencies_ms(pico)
    pico.stop()
    hz = fast_hz(driver)
    fast = {"scan_hz": hz} if profile is None else {**profile, "scan_hz": hz}
    try:
        pico2, diag2, _ = run_board(flashes, driver, fast, tmp, changes=8)
        pico2.stop()
    except TimeoutError as exc:  # the board does not answer at that rate
        diag2 = {"scan_hz": f"no answer at {hz} Hz ({exc})", "scan_us": None}
    free = [h["heap_free"] for h in heap[len(heap) // 3:] if h.get("heap_free") is not None]
    return {
        "scan_us": diag["scan_us"], "scan_us_max": diag["scan_us_max"], "scan_hz": diag["scan_hz"],
        "asked_hz": hz, "max_scan_hz": diag2["scan_hz"], "max_rate_scan_us": diag2["scan_us"],
        "heap_total": heap[0].get("heap_total"), "heap_free_min": min(free, default=None),
        "heap_free_max": max(free, default=None),
        "latency_ms_median": round(statistics.median(lat), 1) if lat else None,
        "latency_ms_min": round(min(lat), 1) if lat else None, "latency_ms_max": round(max(lat), 1) if lat else None,
        "latency_n": len(lat),
        "scan_gap_ms_reading": gaps["reading"]["max_gap_us"] / 1000 if "reading" in gaps else None,
        "scan_gap_ms_not_reading": gaps["not reading"]["max_gap_us"] / 1000 if "not reading" in gaps else None,
        "scans_per_s_not_reading": gaps["not reading"]["n"] * 1000 // HOLD_MS if "not reading" in gaps else None,
        "default_hz": diag.get("scan_hz"),
        "usb_in_ep": diag.get("usb_in_ep", 0),  # the write path: 0 a byte a poll, else chunks while it is idle
        "cpu_share": round(diag["scan_us"] * diag["scan_hz"] / 1e6, 2) if diag.get("scan_us") else None,
    }
