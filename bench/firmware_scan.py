"""Firmware scan benchmark (prints figures; not a test): run with `make bench-firmware`.

Under MicroPython's unix port, from the deployed .mpy form:
- scan cost: microseconds per 64-square scan (the scan step: driver read, active_low, debounce, event queue)
  with the board idle, with one square changing, and with all 64 changing at once; the driver here copies a
  preallocated 8-byte buffer (the cost of real sensor I/O is added below for the RP2040 estimate);
- allocation per scan: gc.mem_alloc() before and after 10,000 scans, no collection in between;
- heap peak: a 10-minute simulated game through the whole firmware (main.py) in a 64 KB heap;
- .mpy sizes per module for the RP2040 (armv6m);
- the scan rate to expect on an RP2040, with its assumptions printed.
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

ROOT = Path(__file__).resolve().parents[1]
FIRMWARE = ROOT / "firmware"
sys.path.insert(0, str(ROOT / "tests"))

# Assumptions for the RP2040 estimate (stated, not measured on a board here):
RP2040_SLOWDOWN = 40     # the same bytecode runs ~40x slower on a 125 MHz Cortex-M0+ than on this x86-64 core
SPI_HZ = 1_000_000       # the hc165 profile's SPI clock: 64 bits take 64 us
SPI_OVERHEAD_US = 25     # two Pin writes (the /PL pulse) and the readinto() call on the RP2040
SCAN_HZ = 200            # the firmware's scan rate target (config COMMON["scan_hz"])

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
        game_run = subprocess.run([mp, "-X", "heapsize=64K", str(t / "unix" / "main.py")], env=env2,
                                  capture_output=True, text=True, check=True)
        mem = json.loads(next(line for line in game_run.stderr.splitlines()
                              if line.startswith("memstats "))[len("memstats "):])
    med = {k: statistics.median(r[k]) for k in ("idle", "one", "all")}
    firmware_us = med["idle"] * RP2040_SLOWDOWN
    busy_us = med["all"] * RP2040_SLOWDOWN
    io_us = 64 * 1_000_000 / SPI_HZ + SPI_OVERHEAD_US
    idle_total = firmware_us + io_us
    busy_total = busy_us + io_us
    figures = {
        "scan_us_unix": {k: round(v, 2) for k, v in med.items()},
        "alloc_bytes_per_scan": r["alloc_bytes"] / 10000,
        "heap": {k: mem[k] for k in ("heap", "setup_alloc", "peak_alloc", "peak_live", "end_live")},
        "game": {"device_ms": mem["device_ms"], "scans": mem["scans"], "messages": mem["messages"]},
        "mpy_bytes_armv6m_total": sum(sizes.values()),
        "mpy_bytes_armv6m": sizes,
        "rp2040_estimate": {
            "assumptions": {"bytecode_slowdown_vs_this_host": RP2040_SLOWDOWN, "spi_hz": SPI_HZ,
                            "spi_call_overhead_us": SPI_OVERHEAD_US},
            "scan_us_idle": round(idle_total), "scan_us_all_changing": round(busy_total),
            "max_scan_hz_idle": round(1e6 / idle_total), "max_scan_hz_all_changing": round(1e6 / busy_total),
            "cpu_share_at_200hz_idle": round(idle_total * SCAN_HZ / 1e6, 3),
        },
    }
    print(json.dumps(figures, indent=2))
    print(f"\nscan (unix port, median of 5 x 4000): idle {med['idle']:.2f} us, one change {med['one']:.2f} us, "
          f"all 64 changing {med['all']:.2f} us; allocation {figures['alloc_bytes_per_scan']:.1f} B/scan")
    print(f"10-minute game in a 64 KB heap: start-up {mem['setup_alloc']} B, peak allocated {mem['peak_alloc']} B,"
          f" live after GC {mem['peak_live']} B; .mpy (armv6m) {sum(sizes.values())} B")
    print(f"RP2040 estimate (assumed {RP2040_SLOWDOWN}x slower bytecode, SPI at {SPI_HZ // 1000} kHz): "
          f"{idle_total:.0f} us a scan idle, {busy_total:.0f} us with all 64 changing: up to "
          f"{1e6 / busy_total:.0f} scans/s; at {SCAN_HZ} Hz the scan uses {idle_total * SCAN_HZ / 1e4:.1f} % "
          f"of the CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
