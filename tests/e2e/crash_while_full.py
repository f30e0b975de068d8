"""A crash while the journal's disk is full (issue 21), end to end with the real firmware (MicroPython, sim
driver) -> pty -> ``touchmove run`` -> a private Mosquitto: the game is played, the journal's filesystem fills up
(tmpfs, or ext4 on a loop device), plies go on being published from memory, the bridge is killed (``kill -9``),
space comes back, the bridge starts again. Counted: plies played, published on MQTT, journaled, exported; seqs
published twice with different content; whether the restart refused to start.

:func:`crash_while_full` is one run; tests/e2e/test_crash_while_full.py makes one, ``bench/crash_while_full.py``
makes many on both filesystems.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess

from tests.e2e.helpers import OPERA, exported_moves, game_moves, journal_moves, simple_timeline, unique_moves
from tests.e2e.rig import BOARD_ID, Rig
from tests.e2e.test_journal_faults import fill, problems

MOVES = game_moves(OPERA)
WANT = [m.uci() for m in MOVES]
TIMELINE = simple_timeline(MOVES, t0=2000, think=5000, hand=800)      # about 22 s at speed 10
#: Filesystem sizes: a 4 MB ext4 leaves 2.7 MB, which the journal and its WAL fill by themselves in some runs
#: (a real full disk to the end of the game).
SIZE_KB = {"tmpfs": 4096, "ext4": 8192}


@dataclass
class CrashRun:
    """What one run counted."""

    filesystem: str
    played: int
    published: int
    journaled: int
    exported: int
    reused_seqs: int           # seqs published with two different contents
    plies_at_crash: int        # plies published when the bridge was killed
    journaled_at_crash: int    # ... and journaled then
    restarted: bool            # the bridge started again (never refused)
    seconds: float
    #: plies the restart recovered in another order than played (a transposition the board cannot tell apart:
    #: the same plies and position), on MQTT, in the journal or in the export, whichever has most; counted in
    #: published/journaled/exported above, but the run did not give the game back as played (:meth:`lost_nothing`
    #: is false)
    reordered: int = 0
    #: ``move_amended`` events published: plies recovered before the order published was read back, amended to it
    amended: int = 0

    def lost_nothing(self) -> bool:
        return (self.published == self.journaled == self.exported == self.played and self.reused_seqs == 0
                and self.restarted and self.reordered == 0)


@contextlib.contextmanager
def small_filesystem(path: Path, kind: str) -> Iterator[None]:
    """Mount a small ``tmpfs`` (4 MB) or ``ext4`` (a loop device, 8 MB: its metadata and internal journal take
    about 1.3 MB of it) on ``path``; needs root. Either leaves the bridge's journal of one game room to grow
    (WAL included) once the filler file is removed."""
    size_kb = SIZE_KB[kind]
    path.mkdir()
    image = path.with_suffix(".img")
    if kind == "tmpfs":
        cmd = ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0700", "tmpfs", str(path)]
    else:
        with open(image, "wb") as fh:
            fh.truncate(size_kb * 1024)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], check=True, capture_output=True)
        cmd = ["mount", "-o", "loop", str(image), str(path)]
    subprocess.run(cmd, check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
        with contextlib.suppress(FileNotFoundError):
            image.unlink()


def can_mount(kind: str) -> str | None:
    """Return why ``kind`` cannot be mounted here, or None."""
    if os.geteuid() != 0:
        return "mounting a small filesystem needs root"
    if kind == "ext4" and (shutil.which("mkfs.ext4") is None or not os.path.exists("/dev/loop-control")):
        return "ext4 on a loop device needs mkfs.ext4 and /dev/loop-control"
    return None


def reused_seqs(events: list[dict[str, Any]]) -> int:
    """Return how many seqs carry two different events (``session`` and ``ts`` aside: a republication)."""
    contents: dict[int, set[str]] = {}
    for event in events:
        body = json.dumps({k: v for k, v in event.items() if k not in ("session", "ts")}, sort_keys=True)
        contents.setdefault(event["seq"], set()).add(body)
    return sum(len(bodies) > 1 for bodies in contents.values())


def crash_while_full(tmp: Path, kind: str, rng: random.Random, *, fill_at: int | None = None,
                     kill_at: int | None = None) -> CrashRun:
    """One run on a ``kind`` filesystem (tmpfs or ext4); the moments are drawn from ``rng``, unless given: the
    filesystem fills once ``fill_at`` plies are published, the bridge is killed once ``kill_at`` are."""
    began = time.monotonic()
    fs = tmp / "fs"
    with small_filesystem(fs, kind):
        rig = Rig(tmp, TIMELINE, speed=10, journal=fs / "journal.sqlite3")
        try:
            sub = rig.start()
            rig.wait_moves(rng.randint(4, 14) if fill_at is None else fill_at)
            filler = fill(fs)
            sub.wait_for(lambda: any(p["code"] == "journal_write_failed" for p in problems(sub)), 60,
                         "the journal fault on bridge/state")
            rig.wait_moves(len(rig.moves()) + rng.randint(1, 3) if kill_at is None else kill_at)   # from memory
            plies_at_crash = len(rig.moves())
            journaled_at_crash = len(journal_moves(rig.journal, BOARD_ID))
            rig.kill_daemon()
            filler.unlink()                                                  # the operator frees space
            rig.start_daemon()
            try:
                sub.wait_for(lambda: matching(rig.moves()) == len(WANT), 120, "the whole game on MQTT")
                sub.wait_for(lambda: any(e["type"] == "game_end" for e in rig.events()), 20, "game_end")
            except AssertionError:
                pass        # counted below
            time.sleep(1.0)
            restarted = rig.daemon is not None and rig.daemon.poll() is None
        finally:
            rig.stop()
        events = rig.events()
        published = unique_moves(events)
        journaled = journal_moves(rig.journal, BOARD_ID)
        exported = exported_moves(rig.journal, BOARD_ID, tmp)
        return CrashRun(kind, len(WANT), matching(published), matching(journaled), matching(exported),
                        reused_seqs(events), plies_at_crash, journaled_at_crash, restarted, time.monotonic() - began,
                        max(reordered(published), reordered(journaled), reordered(exported)),
                        len({e["seq"] for e in events if e["type"] == "move_amended"}))


def matching(moves: list[str]) -> int:
    """Return how many plies of the game ``moves`` has: its first plies in the order played, or in another order
    that the board cannot tell apart (:func:`reordered`); 0 if they differ otherwise. A transposition counted
    0 read as "nothing published after the restart" when the whole game had been (2026-12-02)."""
    return len(moves) if moves == WANT[:len(moves)] or reordered(moves) else 0


def reordered(moves: list[str]) -> int:
    """Return how many plies differ from the game's when ``moves`` is the game's first ``len(moves)`` plies with
    some in another order (the same plies, legal, leading to the same position after them), else 0."""
    want = WANT[:len(moves)]
    if len(moves) != len(want) or sorted(moves) != sorted(want):
        return 0
    played, got = chess.Board(), chess.Board()
    try:
        for a, b in zip(want, moves, strict=True):
            played.push_uci(a)
            got.push_uci(b)
    except ValueError:          # an illegal ply in ``moves``: not the game in another order
        return 0
    if played.epd() != got.epd():
        return 0
    return sum(a != b for a, b in zip(want, moves, strict=True))
