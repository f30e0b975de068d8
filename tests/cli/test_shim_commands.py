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
        # as the bridge writes: several commands in one write, then more while the firmware runs
        burst = b"".join(json.dumps({"cmd": "hello"}).encode() + b"\n" for _ in range(COMMANDS // 2))
        proc.stdin.write(burst)
        proc.stdin.flush()
        for _ in range(COMMANDS // 2):
            proc.stdin.write(b'{"cmd":"snapshot"}\n')
            proc.stdin.flush()
            time.sleep(0.01)
        messages = read_messages(proc.stdout.fileno(), want_hellos=COMMANDS // 2, timeout=60)
    finally:
        proc.kill()
        proc.wait()
    errors = [m for m in messages if m.get("type") == "error"]
    assert errors == [], errors[:3]
    # every hello is answered (the first, at boot, is unasked); every snapshot request too
    assert sum(m.get("type") == "hello" for m in messages) >= COMMANDS // 2
    assert sum(m.get("type") == "snapshot" for m in messages) >= COMMANDS // 2


def read_messages(fd: int, want_hellos: int, timeout: float) -> list[dict[str, object]]:
    """Return the firmware's messages until ``want_hellos`` hellos and as many snapshots came, or time ran out."""
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
        hellos = sum(m.get("type") == "hello" for m in messages)
        snaps = sum(m.get("type") == "snapshot" for m in messages)
        if hellos > want_hellos and snaps >= want_hellos:
            time.sleep(0.5)
            break
    return messages
