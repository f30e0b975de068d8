"""The real firmware (firmware/main.py) under the MicroPython unix port, replaying timelines with the sim
driver: the emitted stream, a pty session with commands, and heap use over a 10-minute game."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time

import pytest

from touchmove import records

from .conftest import FIRMWARE, FIRMWARE_HEAP, mp_env, run_mp, save_figures
from .timeline import Timeline, game

MAX_LATENCY_MS = 30  # a change is reported within ~30 ms (200 Hz scan, 4 equal samples: 15..20 ms)


def _run_sim(micropython: str, path, main: str, *pypath, heapsize: str | None = None, **env: str):
    e = mp_env(*pypath, TOUCHMOVE_SIM=str(path), TOUCHMOVE_SIM_SPEED="0", **env)
    return run_mp(micropython, [main], e, heapsize=heapsize, timeout=300)


def check_stream(out: str, tl: Timeline, max_latency: int = MAX_LATENCY_MS) -> list[dict]:
    """The stream is valid records, seq 0.. without gaps, t non-decreasing; events equal tl.expected."""
    msgs = [json.loads(line) for line in out.splitlines()]
    assert msgs[0]["type"] == "hello" and msgs[1]["type"] == "snapshot"
    last_t = 0
    for i, m in enumerate(msgs):
        assert m["seq"] == i, m
        assert m["t"] >= last_t, m
        last_t = m["t"]
    for problem in records.read(out.splitlines()):
        assert not isinstance(problem, records.Problem), problem
    events = [m for m in msgs if m["type"] in ("lift", "place", "button")]
    got = [(m["type"], m.get("sq") or m["id"]) for m in events]
    want = [(kind, what) for kind, what, _ in tl.expected]
    assert got == want
    for m, (_, _, t_raw) in zip(events, tl.expected, strict=True):
        assert t_raw <= m["t"] <= t_raw + max_latency, (m, t_raw)
    hb = [m for m in msgs if m["type"] == "heartbeat"]
    assert hb and int(hb[-1]["occ"], 16) == tl.final_occ
    return msgs


def test_sim_stream_with_chatter_and_slides(micropython: str, mpy_build, tmp_path) -> None:
    tl = game(seed=5, plies=24, think_ms=(300, 900), chatter=0.8, slide=0.5)
    assert any(r["t"] - tl.records[i - 1]["t"] < 5 for i, r in enumerate(tl.records) if i)  # has chatter
    path = tmp_path / "game.jsonl"
    tl.write(path)
    proc = _run_sim(micropython, path, str(mpy_build / "main.py"), heapsize=FIRMWARE_HEAP)
    assert proc.returncode == 0, proc.stderr.decode()
    msgs = check_stream(proc.stdout.decode(), tl)
    assert sum(m["type"] == "heartbeat" for m in msgs) >= tl.end_t // 1000 - 1


def test_sim_at_ten_times_speed_still_hides_chatter(micropython: str, mpy_build, tmp_path) -> None:
    """A sped-up sim (the demo's, the host's end-to-end tests') scans in device time, never faster than the
    real board, so chatter stays hidden: no event that the timeline doesn't have.

    Real time is not stepped here: if the test machine pauses the process, changes that fell inside the pause
    (at speed 10, a 150 ms slide is 15 ms of real time) are seen together and may cancel out, so a few
    expected events may be missing; none may be extra, and order is kept."""
    tl = game(seed=8, plies=8, think_ms=(300, 600), chatter=1.0, slide=0.5)
    path = tmp_path / "fast.jsonl"
    tl.write(path)
    env = mp_env(TOUCHMOVE_SIM=str(path), TOUCHMOVE_SIM_SPEED="10", TOUCHMOVE_SIM_EXIT="1",
                 TOUCHMOVE_SIM_LINGER="1500")
    proc = run_mp(micropython, [str(mpy_build / "main.py")], env, heapsize=FIRMWARE_HEAP, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    msgs = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [m["seq"] for m in msgs] == list(range(len(msgs)))
    got = [(m["type"], m.get("sq") or m["id"]) for m in msgs if m["type"] in ("lift", "place", "button")]
    want = iter((kind, what) for kind, what, _ in tl.expected)
    assert all(any(g == w for w in want) for g in got), "an event the timeline doesn't have: chatter leaked"
    assert len(got) >= len(tl.expected) - 4, (len(got), len(tl.expected))
    assert int([m for m in msgs if m["type"] == "heartbeat"][-1]["occ"], 16) == tl.final_occ


def test_sim_starts_from_a_leading_snapshot(micropython: str, mpy_build, tmp_path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"t":0,"type":"snapshot","occ":"0000000000001010"}\n'
                    '{"t":300,"type":"lift","sq":"e1"}\n{"t":302,"type":"place","sq":"e1"}\n'
                    '{"t":500,"type":"place","sq":"e8"}\n{"t":900,"type":"snapshot","occ":"1"}\n')
    proc = _run_sim(micropython, path, str(mpy_build / "main.py"), heapsize=FIRMWARE_HEAP, TOUCHMOVE_SIM_LINGER="300")
    msgs = [json.loads(x) for x in proc.stdout.decode().splitlines()]
    assert msgs[1]["occ"] == "0000000000001010"
    ev = [(m["type"], m.get("sq")) for m in msgs if m["type"] in ("lift", "place")]
    # the later snapshot record changes many sensors at once: reported per square, in square order
    assert ev == [("place", "e8"), ("place", "a1"), ("lift", "e1"), ("lift", "e2"), ("lift", "e8")]


def test_sim_bad_timeline_fails_loudly(micropython: str, tmp_path) -> None:
    """From the .py sources, as run from a checkout."""
    path = tmp_path / "bad.jsonl"
    path.write_text('{"t":0,"type":"lift","sq":"z9"}\n')
    proc = _run_sim(micropython, path, str(FIRMWARE / "main.py"))
    assert proc.returncode == 1 and b"bad square" in proc.stderr


def test_fatal_error_is_a_record_on_the_wire(micropython: str, mpy_build, tmp_path) -> None:
    """A fatal error while running: the wire gets an error record in sequence (never a traceback), the
    traceback goes to stderr (on a board: last_error.txt), then the process ends (a board resets)."""
    path = tmp_path / "late.jsonl"
    path.write_text('{"t":100,"type":"lift","sq":"e2"}\n{"t":400,"type":"place","sq":"e4"}\n'
                    '{"t":800,"type":"lift","sq":"a1"}\n{"t":900,"type":"place","sq":"q9"}\n')
    proc = _run_sim(micropython, path, str(mpy_build / "main.py"), heapsize=FIRMWARE_HEAP)
    assert proc.returncode == 1
    lines = proc.stdout.decode().splitlines()
    msgs = [json.loads(x) for x in lines]  # every line is a record: no traceback on the wire
    assert [m["seq"] for m in msgs] == list(range(len(msgs)))
    assert msgs[-1]["type"] == "error" and msgs[-1]["why"].startswith("fatal: ValueError"), msgs[-1]
    assert "bad square" in msgs[-1]["why"]
    assert [m["type"] for m in msgs if m["type"] in ("lift", "place")] == ["lift", "place"]
    assert b"Traceback" in proc.stderr and b"Traceback" not in proc.stdout


def test_runs_across_the_device_time_wrap_in_64k(micropython: str, mpy_build, tmp_path) -> None:
    """Started 3 s before device time wraps at 2**30 ms (12.4 days up): events and heartbeats go on, their
    wire times continue past 2**30, and the run fits the same 72 KB heap."""
    start = 2**30 - 3000
    tl = game(seed=3, plies=10, think_ms=(400, 900), chatter=0.5, slide=0.3)
    path = tmp_path / "wrap.jsonl"
    tl.write(path)
    proc = _run_sim(micropython, path, str(mpy_build / "main.py"), heapsize=FIRMWARE_HEAP,
                    TOUCHMOVE_CLOCK_START=str(start), TOUCHMOVE_MEMSTATS="1")
    assert proc.returncode == 0, proc.stderr.decode()
    msgs = [json.loads(x) for x in proc.stdout.decode().splitlines()]
    for m in msgs:
        m["t"] -= start
    shifted = "\n".join(json.dumps(m) for m in msgs)
    check_stream(shifted, tl)
    assert msgs[-1]["t"] + start > 2**30


def test_ten_minute_game_in_64k_heap(micropython: str, mpy_build, tmp_path) -> None:
    """The deployed form (.mpy) plays a 10-minute game in a 72 KB heap; the peak is printed for the report."""
    tl = game(seed=11, plies=160, think_ms=(2500, 4400), chatter=0.5, slide=0.2)
    assert tl.end_t >= 600_000, tl.end_t
    path = tmp_path / "ten.jsonl"
    tl.write(path)
    start = time.monotonic()
    proc = _run_sim(micropython, path, str(mpy_build / "main.py"), heapsize=FIRMWARE_HEAP, TOUCHMOVE_MEMSTATS="1")
    elapsed = time.monotonic() - start
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    check_stream(proc.stdout.decode(), tl)
    stats = json.loads(re.search(r"^memstats (.*)$", err, re.M).group(1))
    assert stats["heap"] <= int(FIRMWARE_HEAP[:-1]) * 1024 and stats["dropped"] == 0
    assert stats["device_ms"] >= 600_000
    save_figures("firmware-heap.json", {**stats, "timeline_records": len(tl.records), "seconds": elapsed})
    print(f"\n10-minute game ({len(tl.records)} timeline records, {stats['scans']} scans, "
          f"{stats['messages']} messages) in {elapsed:.1f} s: heap {stats['heap']} B, at start-up "
          f"{stats['setup_alloc']} B, peak allocated {stats['peak_alloc']} B, "
          f"peak live after GC {stats['peak_live']} B")


def _read_lines(fd: int, want, timeout: float = 10.0) -> list[dict]:
    """Read JSON lines from fd until want(msgs) is true."""
    buf = b""
    msgs: list[dict] = []
    deadline = time.monotonic() + timeout
    while not want(msgs):
        left = deadline - time.monotonic()
        assert left > 0, (msgs, buf)
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            msgs.append(json.loads(line))
    return msgs


def test_pty_session(micropython: str, mpy_build, tmp_path) -> None:
    """The host's set-up: the firmware on a pseudo-terminal, human-speed timeline, commands in between."""
    tl = game(seed=2, plies=2, think_ms=(200, 300), chatter=1.0, slide=0.0, clock_presses=False)
    path = tmp_path / "pty.jsonl"
    tl.write(path)
    master, slave = pty.openpty()
    env = mp_env(TOUCHMOVE_SIM=str(path), TOUCHMOVE_SIM_SPEED="2")
    proc = subprocess.Popen([micropython, "-X", f"heapsize={FIRMWARE_HEAP}", str(mpy_build / "main.py")],
                            stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    try:
        msgs = _read_lines(master, lambda m: len(m) >= 2)
        assert [m["type"] for m in msgs] == ["hello", "snapshot"]
        # partial line, a Ctrl-C byte, CRLF, garbage, then real commands
        os.write(master, b'{"cmd":"pi')
        time.sleep(0.05)
        os.write(master, b'ng","id":1}\r\n\x03\n{"cmd":"ping","id":2}\n')
        os.write(master, b'{"cmd":"leds","squares":["e4"],"color":[0,64,0]}\n{"cmd":"calibrate"}\n')
        more = _read_lines(master, lambda m: sum(x["type"] in ("pong", "error") for x in m) >= 4)
        replies = [m for m in more if m["type"] in ("pong", "error")]
        assert [(m["type"], m.get("id")) for m in replies] == [
            ("pong", 1), ("error", None), ("pong", 2), ("error", None)]
        assert "calibrate" in replies[3]["why"]
        msgs += more
        msgs += _read_lines(master, lambda m: sum(x["type"] in ("lift", "place") for x in msgs + m) >= 4)
        assert [m["seq"] for m in msgs] == list(range(len(msgs)))
        moves = [(m["type"], m["sq"]) for m in msgs if m["type"] in ("lift", "place")]
        assert moves == [(k, s) for k, s, _ in tl.expected][: len(moves)]
        assert proc.poll() is None  # still running (realtime sims run until killed)
    finally:
        proc.kill()
        proc.wait()
        os.close(master)


def test_stdin_fuzz_through_the_real_process(micropython: str, mpy_build, tmp_path) -> None:
    """Random bytes, 0x03, truncated and oversized lines on the firmware's real stdin: it keeps going, every
    line it writes is a valid record, and a final ping is still answered."""
    import random

    rng = random.Random(4)
    chunks = []
    for _ in range(200):
        kind = rng.randrange(4)
        if kind == 0:
            chunks.append(bytes(rng.randrange(256) for _ in range(rng.randrange(40))))
        elif kind == 1:
            chunks.append(b'{"cmd":"ping","id":1}'[: rng.randrange(20)] + b"\n")
        elif kind == 2:
            chunks.append(b"\x03" * rng.randrange(1, 4) + b'{"cmd":"snapshot"}\r\n')
        else:
            chunks.append(b"{" + b"x" * rng.randrange(200, 700) + b"}\n")
    data = b"".join(chunks) + b'\n{"cmd":"ping","id":"end"}\n'
    path = tmp_path / "t.jsonl"
    path.write_text('{"t":100,"type":"lift","sq":"e2"}\n{"t":300,"type":"place","sq":"e4"}\n')
    env = mp_env(TOUCHMOVE_SIM=str(path), TOUCHMOVE_SIM_SPEED="0", TOUCHMOVE_SIM_LINGER="120000")
    proc = run_mp(micropython, [str(mpy_build / "main.py")], env, heapsize=FIRMWARE_HEAP, stdin=data)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    msgs = [json.loads(x) for x in lines]
    assert [m["seq"] for m in msgs] == list(range(len(msgs)))
    for problem in records.read(lines):
        assert not isinstance(problem, records.Problem), problem
    assert any(m["type"] == "error" for m in msgs)
    assert [m for m in msgs if m["type"] == "pong"][-1]["id"] == "end"
    assert [(m["type"], m["sq"]) for m in msgs if m["type"] in ("lift", "place")] == [("lift", "e2"), ("place", "e4")]


@pytest.mark.parametrize(
    ("board_json", "why"),
    [
        ('{"profile": "hc165", "wdt_m": 2000}', "board.json: unknown key 'wdt_m'"),
        ('{"wdt": true, "wdt_ms": 9000}', "board.json: wdt_ms must be 1000..8388 on pico"),
        ('{"profile": "matrix",', "board.json is not valid JSON"),
    ],
)
def test_main_on_a_board_with_a_bad_board_json_stays_up_and_says_why(
    micropython: str, mpy_build, tmp_path, board_json: str, why: str
) -> None:
    """main.py as a board runs it (the fake machine, board.json in the current folder): no reset, no boot
    loop, no defaults; the host gets hello and the reason, at start and at its hello, and a pong; every line
    is a message the host's decoder accepts (hello's new name, mp and reset fields too)."""
    from touchmove.serial.lines import decode

    from .conftest import FAKES

    (tmp_path / "board.json").write_text(board_json)
    env = mp_env(FAKES, mpy_build, TOUCHMOVE_PROFILE="board.json")
    proc = subprocess.run(
        [micropython, "-X", f"heapsize={FIRMWARE_HEAP}", str(mpy_build / "main.py")], env=env, cwd=tmp_path,
        input=b'{"cmd":"hello"}\n{"cmd":"ping","id":1}\n{"cmd":"snapshot"}\n', capture_output=True, timeout=60,
        check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.splitlines()
    msgs = [decode(x) for x in lines]
    assert [m.kind for m in msgs] == ["hello", "error", "hello", "error", "pong", "error"], lines
    assert [m.seq for m in msgs] == list(range(len(msgs)))
    hello = msgs[0].fields
    assert hello["board"] == "e6614104032b8c2d" and hello["name"] == "touchmove" and hello["reset"] == "power"
    assert all(m.fields["why"].startswith("firmware not started: " + why) for m in msgs if m.kind == "error")
    assert not (tmp_path / "last_error.txt").exists()  # not a fatal error: nothing reset
