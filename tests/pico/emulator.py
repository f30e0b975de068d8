"""The Python side of the emulated Pico (pico.mjs): installing the firmware as a builder does, and a running board
whose USB CDC is a pseudo-terminal that the real ``touchmove run`` opens.

The Node program owns the emulator (rp2040js) and the pin-level models; this side gives it the pty's master,
sends it ops (timelines of magnets over squares, button presses, faults) and collects its events (the lines the
board wrote on USB with their emulated time, resets, the LED frames).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
import tty
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MCU = REPO.parent / "shared" / "mcu"
IMAGE = MCU / "micropython-1.28.0-rpi_pico.uf2"
BOOTROM = MCU / "bootrom" / "rp2040-bootrom-b1.bin"
PICO_JS = HERE / "pico.mjs"
#: machine.unique_id() of the emulated board (the flash's unique id, flash.mjs): the board id in hello
BOARD_ID = "e661385283275a2c"


def missing() -> str | None:
    """Why the emulated Pico cannot run here, or None when it can."""
    if not IMAGE.exists() or not BOOTROM.exists():
        return f"{MCU} (the MicroPython Pico image and the RP2040 boot ROM) is absent"
    if shutil.which("node") is None:
        return "node is not installed (make install installs nodejs and npm from Debian)"
    if not (HERE / "node_modules" / "rp2040js").is_dir():
        return "rp2040js is not installed (make install runs npm ci in tests/pico)"
    return None


def build_mpy(dest: Path, board: str = "pico") -> Path:
    """The firmware's .mpy files (and main.py) as ``make mpy BOARD=pico`` makes them, copied to ``dest``.

    make builds into a folder of this process's own under build/ (several test runs may build at once), and
    installs nothing (``-o install``): the tests run after ``make install``, and an install from inside a test
    would race the other worker's (pip and npm ci rewriting the venv and node_modules under running tests)."""
    own = f"build/mpy-{board}-test{os.getpid()}"
    try:
        subprocess.run(["make", "-s", "-o", "install", "mpy", f"BOARD={board}", f"MPY_DIR={own}"], cwd=REPO,
                       check=True, capture_output=True, timeout=300)
        shutil.copytree(REPO / own, dest, dirs_exist_ok=True)
    finally:
        shutil.rmtree(REPO / own, ignore_errors=True)
    return dest


def install(files: Iterable[tuple[str, Path]], out: Path, base: Path | None = None,
            timeout: float = 600) -> dict[str, Any]:
    """Write files onto the board's filesystem through the raw REPL (as mpremote does) and save its flash to
    ``out``; starts from the bare image (a fresh littlefs is formatted at first boot) or from ``base``."""
    manifest = out.with_suffix(".files.json")
    manifest.write_text(json.dumps([[dev, str(host)] for dev, host in files]))
    argv = ["node", str(PICO_JS), "install", "--image", str(IMAGE), "--bootrom", str(BOOTROM),
            "--flash-out", str(out), "--files", str(manifest)]
    if base is not None:
        argv += ["--flash-in", str(base)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"installing on the emulated Pico failed: {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


class FlashCache:
    """Flash images by what was installed on them, so each board set-up is installed once a session."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.base: Path | None = None
        self.main = folder / "mpy-pico" / "main.py"

    def firmware(self) -> Path:
        """The flash with the firmware's .mpy files (no main.py yet: the board stays at the REPL)."""
        if self.base is None:
            mpy = build_mpy(self.folder / "mpy-pico")
            self.main = mpy / "main.py"
            files = [(str(p.relative_to(mpy)), p) for p in sorted(mpy.rglob("*.mpy"))]
            self.base = self.folder / "firmware.flash"
            install(files, self.base)
        return self.base

    def board(self, board_json: dict[str, Any] | str | None, main: bool = True, boot: Path | None = None) -> Path:
        """The firmware's flash plus a board.json (a dict, or raw text for malformed files), main.py and, for a
        test that needs one, a ``boot.py`` (run before main.py)."""
        text = board_json if isinstance(board_json, str) or board_json is None else json.dumps(board_json)
        boot_text = boot.read_text() if boot is not None else ""
        key = hashlib.sha256(f"{text}|{main}|{boot_text}".encode()).hexdigest()[:16]
        out = self.folder / f"board-{key}.flash"
        if out.exists():
            return out
        files: list[tuple[str, Path]] = []
        if text is not None:
            bj = self.folder / f"board-{key}.json"
            bj.write_text(text)
            files.append(("board.json", bj))
        if boot is not None:
            files.append(("boot.py", boot))
        if main:
            self.firmware()
            files.append(("main.py", self.main))
        install(files, out, base=self.firmware())
        return out


class EmulatedPico:
    """A running emulated board; its USB CDC is the pty behind ``link`` (a symlink, like /dev/serial/by-id)."""

    def __init__(self, flash: Path, link: Path, driver: str, *, clock_start_ms: int | None = None,
                 log: Path | None = None, board_id: str = BOARD_ID, occ: int = 0,
                 hold_button: str | None = None) -> None:
        self.hold_button = hold_button
        self.board_id = board_id
        self.occ = occ
        self.flash = flash
        self.link = link
        self.driver = driver
        self.clock_start_ms = clock_start_ms
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.events: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self._master = -1
        self._ids = 0

    def start(self) -> EmulatedPico:
        master, slave = os.openpty()
        tty.setraw(slave)
        name = os.ttyname(slave)
        os.close(slave)  # nobody has the port open until the bridge opens it (DTR low meanwhile)
        fcntl.fcntl(master, fcntl.F_SETFL, fcntl.fcntl(master, fcntl.F_GETFL) | os.O_NONBLOCK)
        self._master = master
        tmp = self.link.with_name(self.link.name + ".tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        os.symlink(name, tmp)
        os.replace(tmp, self.link)
        argv = ["node", str(PICO_JS), "run", "--bootrom", str(BOOTROM), "--flash-in", str(self.flash),
                "--pty-fd", str(master), "--driver", self.driver, "--unique-id", self.board_id]
        if self.hold_button:
            argv += ["--hold-button", self.hold_button]
        if self.occ:
            argv += ["--occ", f"{self.occ:016x}"]
        if self.clock_start_ms is not None:
            argv += ["--clock-start-ms", str(self.clock_start_ms)]
        err = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                     pass_fds=(master,))
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            with self.cond:
                self.events.append(ev)
                self.cond.notify_all()
        with self.cond:
            self.events.append({"ev": "exit"})
            self.cond.notify_all()

    def send(self, op: str, **kw: Any) -> int:
        """Send an op to the emulator; returns its id (events that answer it carry the id)."""
        assert self.proc is not None and self.proc.stdin is not None
        self._ids += 1
        self.proc.stdin.write((json.dumps({"op": op, "id": self._ids, **kw}) + "\n").encode())
        self.proc.stdin.flush()
        return self._ids

    def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float, what: str,
             start: int = 0) -> dict[str, Any]:
        """The first event from index ``start`` on that ``pred`` accepts (waiting up to ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        i = start
        with self.cond:
            while True:
                while i < len(self.events):
                    ev = self.events[i]
                    i += 1
                    if pred(ev):
                        return ev
                    if ev.get("ev") == "exit":
                        raise AssertionError(f"the emulator exited while waiting for {what}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out ({timeout:.0f} s) waiting for {what}; "
                                         f"last events {self.events[-5:]}")
                self.cond.wait(min(left, 0.5))

    def lines(self) -> list[dict[str, Any]]:
        """The NDJSON records the board wrote on USB (decoded), each with its emulated time ``us``."""
        out = []
        with self.cond:
            evs = list(self.events)
        for ev in evs:
            if ev.get("ev") == "line":
                with contextlib.suppress(ValueError):
                    rec = json.loads(ev["text"])
                    if isinstance(rec, dict):
                        rec["us"] = ev["us"]
                        out.append(rec)
        return out

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self.cond:
            return [e for e in self.events if e.get("ev") == kind]

    def now_us(self, timeout: float = 30) -> int:
        """The emulator's current time (µs)."""
        i = self.send("time")
        return int(self.wait(lambda e: e.get("ev") == "time" and e.get("id") == i, timeout, "the time")["us"])

    def leds(self, timeout: float = 60) -> dict[str, Any]:
        """The last WS2812 frame seen at the LED pin: {"pixels": [[r, g, b], ...], "frames": count}."""
        i = self.send("leds")
        return self.wait(lambda e: e.get("ev") == "leds" and e.get("id") == i, timeout, "the LED frame")

    def scans(self, reset: bool = False, timeout: float = 60) -> dict[str, Any]:
        """The scans seen at the sensor pins since the last reset: ``n``, ``max_gap_us`` (the longest time
        between two) and ``worst_at_us``; ``reset`` starts the count again."""
        i = self.send("scans", reset=reset)
        return self.wait(lambda e: e.get("ev") == "scans" and e.get("id") == i, timeout, "the scan count")

    def play(self, events: list[dict[str, Any]]) -> int:
        """Start a timeline (``{"t": ms, "occ": hex}`` / ``{"t": ms, "press": name}``, t from now)."""
        return self.send("timeline", events=events)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self.send("quit")
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._master >= 0:
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = -1
        with contextlib.suppress(FileNotFoundError):
            self.link.unlink()
