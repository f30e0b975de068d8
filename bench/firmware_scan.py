"""Firmware scan benchmark (prints figures; not a test): run with `make bench-firmware` (`--pico`: only the
emulated Pico's figures; `--unix`: only the unix port's).

Under MicroPython's unix port, from the deployed .mpy form:
- scan cost: microseconds per 64-square scan (the scan step: driver read, active_low, debounce, event queue)
  with the board idle, with one square changing, and with all 64 changing at once; the driver here copies a
  preallocated 8-byte buffer (the cost of real sensor I/O is added below for the RP2040 estimate);
- allocation per scan: gc.mem_alloc() before and after 10,000 scans, no collection in between;
- heap peak: a 10-minute simulated game through the whole firmware (main.py) in the heap the firmware tests give
  it (:data:`GAME_HEAP`);
- .mpy sizes per module for the RP2040 (armv6m);
- on the emulated Raspberry Pi Pico (tests/pico: the stock MicroPython 1.28.0 image in rp2040js, the firmware's
  .mpy files installed, sensors modelled at the pins), for each driver: the scan time in emulated us at 125 MHz
  (the firmware's own diag: mean of 256 scans and the longest), the highest scan rate it sustains (asked for
  1000 Hz, the rate it reaches), the free heap at steady state (the GC's allocation table read from RAM over
  10 s of scanning) and the time from a magnet's arrival over a square to the end of its USB line.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from figures import Run

ROOT = Path(__file__).resolve().parents[1]
FIRMWARE = ROOT / "firmware"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(1, str(ROOT))  # tests.pico: the emulated Pico

DRIVERS = ("hc165", "matrix", "mcp23017", "hall_mux")
#: The heap of the 10-minute game: the firmware tests' (tests/firmware/conftest.py, FIRMWARE_HEAP). On the 64-bit
#: unix port objects take about twice their RP2040 size; the firmware starts in 62-64 KB there, and a 64 KB heap
#: ran out at start-up (MemoryError, 2026-12-06), so the bench printed nothing.
GAME_HEAP = "72K"

MP_BENCH = r'''
import gc, time, json
from touchmove_fw.scan import Scanner
from touchmove_fw.evqueue import EventQueue
from touchmove_fw.maps import build_map

class Board:
    def __init__(self):
        self.bits = bytearray((0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF))
    def read(self, buf):
        b = self.bits
        for k in range(8):
            buf[k] = b[k]

def run(mode, n=4000):
    board = Board()
    q = EventQueue(64)
    s = Scanner(board, build_map(None), q, None, True, 4, 0, 1000)
    s.prime(0)
    bits = board.bits
    t0 = time.ticks_us()
    for i in range(n):
        if mode == "one" and i % 8 == 0:
            bits[3] ^= 0x10          # e4 changes every 8th scan (settles after 4: one event per change)
        elif mode == "all" and i % 8 == 0:
            for k in range(8):
                bits[k] ^= 0xFF      # all 64 change at once
        s.scan(5 * i)
        while q.n:
            q.pop()
    return time.ticks_diff(time.ticks_us(), t0) / n

out = {}
for mode in ("idle", "one", "all"):
    out[mode] = [run(mode) for _ in range(5)]
board = Board()
q = EventQueue(64)
s = Scanner(board, build_map(None), q, None, True, 4, 0, 1000)
s.prime(0)
gc.collect()
gc.disable()
a0 = gc.mem_alloc()
for i in range(10000):
    if i % 8 == 0:
        board.bits[i % 8] ^= 0xFF
    s.scan(5 * i)
    while q.n:
        q.pop()
out["alloc_bytes"] = gc.mem_alloc() - a0
gc.enable()
t0 = time.ticks_us()
x = 0
for i in range(100000):
    x += i
out["ref_loop_us"] = time.ticks_diff(time.ticks_us(), t0) / 100000
print(json.dumps(out))
'''


def _tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else (shutil.which(name) or name)


def build_mpy(out: Path, march: str | None) -> dict[str, int]:
    sizes = {}
    for src in sorted(FIRMWARE.rglob("*.py")):
        rel = src.relative_to(FIRMWARE)
        if rel.name in ("main.py", "manifest.py"):
            shutil.copy(src, out / rel.name)
            continue
        dst = (out / rel).with_suffix(".mpy")
        dst.parent.mkdir(parents=True, exist_ok=True)
        cmd = [_tool("mpy-cross"), "-o", str(dst), "-s", str(rel), str(rel)]
        if march:
            cmd.insert(1, f"-march={march}")
        subprocess.run(cmd, check=True, cwd=FIRMWARE)
        sizes[str(rel.with_suffix(".mpy"))] = dst.stat().st_size
    return sizes


def main() -> int:
    if sys.argv[1:] == ["--pico"]:  # only the emulated Pico's figures
        emulated_pico()
        return 0
    if sys.argv[1:] not in ([], ["--unix"]):
        print("usage: firmware_scan.py [--pico | --unix]", file=sys.stderr)
        return 2
    fig = Run("firmware_unix")
    mp = _tool("micropython")
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "unix").mkdir()
        (t / "rp2").mkdir()
        build_mpy(t / "unix", None)
        sizes = build_mpy(t / "rp2", "armv6m")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("TOUCHMOVE_")},
               "MICROPYPATH": f"{t / 'unix'}:.frozen"}
        (t / "bench_scan.py").write_text(MP_BENCH)
        proc = subprocess.run([mp, "-X", "heapsize=64K", str(t / "bench_scan.py")], env=env,
                              capture_output=True, text=True, check=True)
        r = json.loads(proc.stdout)
        from firmware.timeline import game  # tests/firmware/timeline.py
        tl = game(seed=11, plies=160, think_ms=(2500, 4400), chatter=0.5, slide=0.2)
        tl.write(t / "ten.jsonl")
        env2 = {**env, "TOUCHMOVE_SIM": str(t / "ten.jsonl"), "TOUCHMOVE_SIM_SPEED": "0",
                "TOUCHMOVE_MEMSTATS": "1"}
        game_run = subprocess.run([mp, "-X", f"heapsize={GAME_HEAP}", str(t / "unix" / "main.py")], env=env2,
                                  capture_output=True, text=True, check=True)
        mem = json.loads(next(line for line in game_run.stderr.splitlines()
                              if line.startswith("memstats "))[len("memstats "):])
    med = {k: statistics.median(r[k]) for k in ("idle", "one", "all")}
    figures = {
        "scan_us_unix": {k: round(v, 2) for k, v in med.items()},
        "alloc_bytes_per_scan": r["alloc_bytes"] / 10000,
        "heap": {k: mem[k] for k in ("heap", "setup_alloc", "peak_alloc", "peak_live", "end_live")},
        "game": {"device_ms": mem["device_ms"], "scans": mem["scans"], "messages": mem["messages"]},
        "mpy_bytes_armv6m_total": sum(sizes.values()),
        "mpy_bytes_armv6m": sizes,
    }
    print(json.dumps(figures, indent=2))
    print(f"\nscan (unix port, median of 5 x 4000): idle {med['idle']:.2f} us, one change {med['one']:.2f} us, "
          f"all 64 changing {med['all']:.2f} us; allocation {figures['alloc_bytes_per_scan']:.1f} B/scan")
    print(f"10-minute game in a {GAME_HEAP}B heap: start-up {mem['setup_alloc']} B, "
          f"peak allocated {mem['peak_alloc']} B, live after GC {mem['peak_live']} B; "
          f".mpy (armv6m) {sum(sizes.values())} B")
    for name, key in (("scan, idle", "idle"), ("scan, one change", "one"), ("scan, all 64 changing", "all")):
        fig.add(name, round(med[key], 2), "µs", group="MicroPython's unix port")
    fig.add("allocation a scan", round(figures["alloc_bytes_per_scan"], 1), "B", group="MicroPython's unix port")
    for name, key in (("start-up", "setup_alloc"), ("peak allocated", "peak_alloc"), ("live after GC", "peak_live")):
        fig.add(name, mem[key], "B", group=f"10-minute game, {GAME_HEAP}B heap")
    fig.add(".mpy (armv6m)", sum(sizes.values()), "B", group="the firmware")
    fig.write()
    if sys.argv[1:] != ["--unix"]:
        emulated_pico()
    return 0


def emulated_pico() -> None:
    """Print the figures of each driver on the emulated Pico (or why they cannot be had here)."""
    from tests.pico.bench_pico import measure_driver
    from tests.pico.emulator import FlashCache, missing

    why = missing()
    if why is not None:
        print(f"\nemulated Pico: not measured ({why})")
        return
    fig = Run("firmware_pico")
    print("\nemulated Raspberry Pi Pico (MicroPython 1.28.0 in rp2040js 1.4.1; emulated time at 125 MHz):")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        flashes = FlashCache(Path(tmp))
        for d in DRIVERS:
            rows[d] = measure_driver(flashes, d, Path(tmp))
            print(d, json.dumps(rows[d]), flush=True)
    for d, f in rows.items():
        path = f"32-byte chunks while USB IN endpoint {f['usb_in_ep']} is idle" if f["usb_in_ep"] else "a byte a poll"
        print(f"{d:9s} scan {f['scan_us']} us (longest {f['scan_us_max']} us) at {f['scan_hz']} Hz; "
              f"asked for {f['asked_hz']} Hz: {f['max_scan_hz']} scans/s; "
              f"free heap {f['heap_free_min']}..{f['heap_free_max']} "
              f"of {f['heap_total']} B; magnet -> USB line {f['latency_ms_median']} ms median "
              f"({f['latency_ms_min']}..{f['latency_ms_max']}, n={f['latency_n']}); CPU {f['cpu_share']}; "
              f"longest scan gap {f['scan_gap_ms_reading']} ms with the host reading, "
              f"{f['scan_gap_ms_not_reading']} ms with it not reading for 3 s; write path: {path}")
        fig.add("scan (mean of 256)", f["scan_us"], "µs", group=d)
        fig.add("longest scan", f["scan_us_max"], "µs", group=d)
        fig.add("rate", f["scan_hz"], "Hz", group=d)
        fig.add("CPU", f["cpu_share"], group=d)
        fig.add("longest scan gap, host reading", f["scan_gap_ms_reading"], "ms", group=d)
        fig.add("longest scan gap, host not reading", f["scan_gap_ms_not_reading"], "ms", group=d)
        fig.add("free heap", f"{f['heap_free_min']:,}-{f['heap_free_max']:,}", "B", group=d)
        fig.add("magnet → USB line, median", f["latency_ms_median"], "ms", group=d)
    fig.note("emulated time at 125 MHz (MicroPython 1.28.0 in rp2040js 1.4.1): the load changes the wall time, not "
             "the figures")
    fig.write()


if __name__ == "__main__":
    sys.exit(main())
