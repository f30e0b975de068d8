"""The pip path: the firmware under CPython (the shim) reads its commands unbuffered, so none is garbled.

A buffered stdin pulled the rest of a line into Python's buffer on the first one-byte read; the firmware's
next poll of the descriptor saw nothing, and the line was cut: ``bad json`` / ``missing 'cmd'`` errors, LED
commands and the bridge's hello/snapshot requests lost.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from touchmove.sim import demo

COMMANDS = 40


def test_commands_reach_the_firmware_under_the_shim(tmp_path: Path) -> None:
    timeline = tmp_path / "timeline.jsonl"
    demo.write_timeline(timeline, demo.timeline_for(demo.read_game(demo.DEFAULT_PGN))[:4])
    env = dict(os.environ, TOUCHMOVE_SIM=str(timeline), TOUCHMOVE_SIM_SPEED="1", TOUCHMOVE_SIM_EXIT="0",
               TOUCHMOVE_BOARD="shimtest")
    main_py = Path(demo.FIRMWARE) / "main.py"
    proc = subprocess.Popen([sys.executable, "-m", "touchmove.sim.micropython_shim", str(main_py)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        # as the bridge writes: several commands in one write, then more while the firmware runs. Pings with
        # their own ids: each must be answered, in order (a burst of hellos or snapshot requests no longer gets an
        # answer each: the firmware answers a backlog of the same request once, firmware/touchmove_fw/app.py)
        burst = b"".join(json.dumps({"cmd": "ping", "id": i}).encode() + b"\n" for i in range(COMMANDS // 2))
        proc.stdin.write(burst)
        proc.stdin.flush()
        for i in range(COMMANDS // 2, COMMANDS):
            proc.stdin.write(json.dumps({"cmd": "ping", "id": i}).encode() + b"\n")
            proc.stdin.flush()
            time.sleep(0.01)
        proc.stdin.write(b'{"cmd":"hello"}\n')
        proc.stdin.flush()
        messages = read_messages(proc.stdout.fileno(), want_pongs=COMMANDS, timeout=60)
    finally:
        proc.kill()
        proc.wait()
    errors = [m for m in messages if m.get("type") == "error"]
    assert errors == [], errors[:3]
    # every ping is answered, in order; the hello after them too (the first hello, at boot, is unasked)
    assert [m["id"] for m in messages if m.get("type") == "pong"] == list(range(COMMANDS))
    assert sum(m.get("type") == "hello" for m in messages) == 2


def read_messages(fd: int, want_pongs: int, timeout: float) -> list[dict[str, object]]:
    """Return the firmware's messages until ``want_pongs`` pongs and a hello after them came, or time ran out."""
    buf = b""
    deadline = time.monotonic() + timeout
    messages: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            messages += [json.loads(line) for line in lines if line.strip().startswith(b"{")]
        pongs = sum(m.get("type") == "pong" for m in messages)
        if pongs >= want_pongs and messages[-1].get("type") in ("hello", "snapshot"):
            time.sleep(0.5)
            break
    return messages
