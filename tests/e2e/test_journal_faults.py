"""Journal faults end to end (issue 9) with the real firmware (MicroPython, sim driver) -> pty -> ``touchmove
run`` -> a private Mosquitto: the journal's filesystem fills up mid-game, and another program locks the journal.
Publishing goes on, the fault is on ``bridge/state`` and in ``health_check``, and once the journal can write
again the whole game is on MQTT, in the journal and in ``touchmove export``."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.e2e.helpers import OPERA, Subscriber, exported_moves, game_moves, simple_timeline
from tests.e2e.rig import BOARD_ID, Rig

MOVES = game_moves(OPERA)
WANT = [m.uci() for m in MOVES]
TIMELINE = simple_timeline(MOVES, t0=2000, think=5000, hand=800)   # about 22 s at speed 10
STATE = "touchmove/bridge/state"


def problems(sub: Subscriber) -> list[dict[str, Any]]:
    last = sub.last(STATE)
    return list(last.json().get("problems", [])) if last is not None else []


def health_check(sub: Subscriber) -> dict[str, Any]:
    before = len(sub.messages)
    sub.publish("touchmove/bridge/request/health_check", b'{"transaction":"hc"}')
    topic = "touchmove/bridge/response/health_check"
    sub.wait_for(lambda: any(m.topic == topic for m in sub.messages[before:]), 10, "the health_check reply")
    reply = sub.last(topic)
    assert reply is not None
    return dict(reply.json()["data"])


@contextlib.contextmanager
def tiny_filesystem(path: Path, size_kb: int) -> Iterator[bool]:
    """Mount a tmpfs of ``size_kb`` on ``path`` when allowed (root); yield whether it is mounted."""
    path.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0700", "tmpfs", str(path)],
        capture_output=True).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(path: Path) -> Path:
    """Write a file until the filesystem is full; return it."""
    filler = path / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as fh:
        while True:
            try:
                fh.write(chunk)
            except OSError as exc:
                assert exc.errno in (errno.ENOSPC, errno.EFBIG), exc
                break
        with contextlib.suppress(OSError):
            fh.write(b"\0" * 512)     # the last few blocks
    return filler


def test_a_full_filesystem_mid_game_loses_nothing(tmp_path: Path) -> None:
    with tiny_filesystem(tmp_path / "fs", 4096) as mounted:
        rig = Rig(tmp_path, TIMELINE, speed=10, journal=tmp_path / "fs" / "journal.sqlite3")
        try:
            sub = rig.start()
            rig.wait_moves(6)
            if mounted:
                filler = fill(tmp_path / "fs")                  # the disk is full
            else:
                # no tmpfs without root: the daemon's files may not grow past their size (RLIMIT_FSIZE)
                assert rig.daemon is not None
                size = max(f.stat().st_size for f in (tmp_path / "fs").iterdir())
                resource.prlimit(rig.daemon.pid, resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
            sub.wait_for(lambda: any(p["code"] == "journal_write_failed" for p in problems(sub)), 60,
                         "the journal fault on bridge/state")
            fault = next(p for p in problems(sub) if p["code"] == "journal_write_failed")
            assert fault["reason"] in ("database or disk is full", "disk I/O error"), fault
            health = health_check(sub)
            assert health["healthy"] is False and health["journal"]["ok"] is False
            assert health["journal"]["error"] == fault["reason"]
            during = len(rig.moves())
            rig.wait_moves(during + 3)                           # still published while nothing is journaled
            if mounted:
                filler.unlink()                                  # the operator frees space
            else:
                assert rig.daemon is not None
                resource.prlimit(rig.daemon.pid, resource.RLIMIT_FSIZE,
                                 (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            sub.wait_for(lambda: (m := sub.last(STATE)) is not None and m.json() == {"state": "online"}, 30,
                         "the journal writing again")
            counts = rig.assert_full_game(MOVES)
            assert health_check(sub)["healthy"] is True
        finally:
            rig.stop()
        assert exported_moves(rig.journal, BOARD_ID, tmp_path) == WANT
        assert counts["events"] > len(WANT)
        print(f"tmpfs: {mounted}; fault: {fault['reason']}; plies played/published/journaled/exported: "
              f"{len(WANT)} each")


def test_a_journal_locked_by_another_program_is_a_fault_until_released(tmp_path: Path) -> None:
    rig = Rig(tmp_path, TIMELINE, speed=10)
    try:
        sub = rig.start()
        rig.wait_moves(8)
        locker = sqlite3.connect(rig.journal, isolation_level=None, check_same_thread=False)
        locker.execute("BEGIN EXCLUSIVE")                        # e.g. a backup tool holding the write lock
        try:
            sub.wait_for(lambda: any(p["code"] == "journal_write_failed" for p in problems(sub)), 30,
                         "the lock reported on bridge/state")
            fault = next(p for p in problems(sub) if p["code"] == "journal_write_failed")
            assert fault["reason"] == "database is locked"
            during = len(rig.moves())
            rig.wait_moves(during + 2)
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        sub.wait_for(lambda: (m := sub.last(STATE)) is not None and m.json() == {"state": "online"}, 30,
                     "the journal writing again")
        rig.assert_full_game(MOVES)
        events = [json.loads(m.payload) for m in sub.messages if m.topic.endswith("/events")]
        assert all(e["session"] == events[0]["session"] for e in events)     # no restart was needed
    finally:
        rig.stop()
    assert exported_moves(rig.journal, BOARD_ID, tmp_path) == WANT


