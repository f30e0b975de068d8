"""Games on the emulated Pico: the hand model's records turned into magnets over squares and clock presses, and a
rig of a private Mosquitto, the real ``touchmove run`` (a process) and a subscriber around emulated boards."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import chess

from tests.e2e.helpers import Broker, Subscriber, exported_moves, start_daemon, unique_moves, write_config
from tests.pico.emulator import EmulatedPico
from touchmove.records import Clock, Lift, Place
from touchmove.sim import hands

#: The bridge's settle time for the emulated boards (device ms). Shorter than a human pace needs, see PACE.
SETTLE_MS = 60
#: The pace the games are played at on the emulated Pico (the emulator runs at 0.1-0.4x real time): the hand
#: model with short thinking and rests, its times then halved (SPEEDUP): about 0.5 s of device time a ply, where
#: people take 1-30 s. Changes on different squares come at least 20 ms apart, a piece rests at least 80 ms after
#: it is released (longer than the bridge's settle time) and a clock press lasts 150 ms: the firmware's debounce (4
#: equal scans at 200 Hz, 15-20 ms) sees every change as a board would. The hand model's contact chatter and
#: bounces (1-6 ms, halved) stay in: the debounce must hide them.
PACE = hands.Style(settle_ms=2 * SETTLE_MS, think_ms=(40, 160), release_ms=(2 * SETTLE_MS + 40, 2 * SETTLE_MS + 100),
                   hesitate=0.0, slide=0.2)
SPEEDUP = 2
#: The shortest time a square stays empty between a lift and a placement on it in the emulated games (ms).
CAPTURE_GAP_MS = 80
#: Longer than the hands' contact bounces at this pace (1-6 ms, halved).
BOUNCE_MS = 8
BUTTONS = {chess.WHITE: "clock_white", chess.BLACK: "clock_black"}
PRESS_MS = 150  # a hand on a chess clock: 0.1-0.2 s


def board_timeline(start: chess.Board, moves: list[chess.Move], seed: int = 1858,
                   t0: int = 300, speedup: int = SPEEDUP) -> list[dict[str, Any]]:
    """The emulator's timeline for a game: ``{"t": ms, "occ": hex}`` for every sensor change the hands make and
    ``{"t": ms, "press": button}`` for the clock presses, times from ``t0``."""
    player = hands.Hands(random.Random(seed), PACE, t=0)
    hands.play(start.copy(), moves, player)
    player.flush()
    occ = start.occupied
    out: list[dict[str, Any]] = []
    lifted_at: dict[chess.Square, int] = {}
    shift = 0
    for rec in player.records:
        rec = replace(rec, t=t0 + rec.t // speedup + shift)
        if isinstance(rec, Lift):
            occ &= ~chess.BB_SQUARES[rec.sq]
            lifted_at[rec.sq] = rec.t
            out.append({"t": rec.t, "occ": f"{occ:016x}"})
        elif isinstance(rec, Place):
            # A square emptied and filled again faster than a hand can (a capture's victim off and the capturer
            # down 20 ms apart at twice the hands' fast pace) is a swap no sensor and debounce resolve: the rest
            # of the game waits until the square has been empty for CAPTURE_GAP_MS. (A contact bounce, a few ms,
            # stays as it is: the debounce must hide it.)
            gap = rec.t - lifted_at.get(rec.sq, -CAPTURE_GAP_MS)
            if BOUNCE_MS < gap < CAPTURE_GAP_MS:
                shift += CAPTURE_GAP_MS - gap
                rec = replace(rec, t=rec.t + CAPTURE_GAP_MS - gap)
            occ |= chess.BB_SQUARES[rec.sq]
            out.append({"t": rec.t, "occ": f"{occ:016x}"})
        elif isinstance(rec, Clock):
            out.append({"t": rec.t, "press": BUTTONS[rec.side], "ms": PRESS_MS})
    return out


def budget_s(timeline: list[dict[str, Any]]) -> float:
    """Wall seconds to allow for a timeline: the emulator runs at 0.4x real time on a free core, and down to
    0.025x on a machine shared with many jobs."""
    return 120 + 40 * timeline[-1]["t"] / 1000


def start_occupancy(start: chess.Board) -> dict[str, Any]:
    """The op that puts the pieces on the board before power-up."""
    return {"t": 0, "occ": f"{start.occupied:016x}"}


class BridgeRig:
    """A private Mosquitto, ``touchmove run`` (a process, its own journal) and a subscriber, for boards on ptys
    matching ``tmp/ttyPICO*``."""

    def __init__(self, tmp: Path, settle_ms: int = SETTLE_MS) -> None:
        self.tmp = tmp
        self.broker = Broker(tmp)
        self.journal = tmp / "journal.sqlite3"
        self.config = write_config(tmp / "bridge.toml", broker_port=self.broker.port,
                                   ports=[str(tmp / "ttyPICO*")], journal=self.journal, settle_ms=settle_ms,
                                   rescan_s=0.2)
        self.daemon: subprocess.Popen[bytes] | None = None
        self.sub: Subscriber | None = None
        self.boards: list[EmulatedPico] = []

    def start(self) -> BridgeRig:
        self.broker.start()
        self.sub = Subscriber(self.broker.port)
        self.daemon = start_daemon(self.config, self.tmp / "daemon.log")
        self.sub.wait_for(lambda: self.sub is not None and self.sub.last("touchmove/bridge/state") is not None,
                          30, "the bridge online")
        return self

    def board(self, flash: Path, driver: str, name: str = "ttyPICO0", **kw: Any) -> EmulatedPico:
        pico = EmulatedPico(flash, self.tmp / name, driver, log=self.tmp / f"node-{name}.log", **kw)
        self.boards.append(pico)
        return pico

    def events(self, board: str) -> list[dict[str, Any]]:
        assert self.sub is not None
        return self.sub.events(board)

    def moves(self, board: str, game: int = 1) -> list[str]:
        return unique_moves(self.events(board), game)

    def wait_moves(self, board: str, want: list[str], timeout: float, game: int = 1) -> None:
        assert self.sub is not None
        try:
            self.sub.wait_for(lambda: self.moves(board, game) == want, timeout, f"{len(want)} plies on MQTT")
        except AssertionError:
            raise AssertionError(f"{board}: got {self.moves(board, game)}\nwant {want}\n"
                                 f"{self.daemon_log()[-3000:]}") from None

    def journal_moves(self, board: str) -> list[str]:
        with sqlite3.connect(self.journal) as db:
            rows = db.execute("SELECT payload FROM events WHERE board = ? ORDER BY seq", (board,)).fetchall()
        return unique_moves([json.loads(p) for (p,) in rows])

    def journal_published(self, board: str) -> int:
        with sqlite3.connect(self.journal) as db:
            row = db.execute("SELECT published FROM boards WHERE board = ?", (board,)).fetchone()
        return int(row[0]) if row else 0

    def assert_exact(self, board: str, played: list[str]) -> dict[str, int]:
        """The game exactly as played on MQTT (seq without gaps), in the journal (once it caught up) and in the
        export; return the plies played, published, journaled and exported, each counted from the list checked
        (counted in a second read, a move taken back and made again meanwhile showed one ply short)."""
        assert self.sub is not None
        events = self.events(board)
        seqs = sorted({e["seq"] for e in events})
        assert seqs == list(range(1, len(seqs) + 1)), f"{board}: a gap in the event seq"
        published = unique_moves(events)
        assert published == played
        top = seqs[-1] if seqs else 0
        self.sub.wait_for(lambda: self.journal_published(board) >= top, 15, "the journal's published mark")
        journaled = self.journal_moves(board)
        assert journaled == played
        out = self.tmp / f"export-{board}"
        out.mkdir(exist_ok=True)
        exported = exported_moves(self.journal, board, out)
        assert exported == played
        return {"played": len(played), "published": len(published), "journaled": len(journaled),
                "exported": len(exported)}

    def daemon_log(self) -> str:
        path = self.tmp / "daemon.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop_reading(self) -> None:
        """Stop the bridge process (SIGSTOP): the port stays open, nothing reads it."""
        assert self.daemon is not None
        self.daemon.send_signal(signal.SIGSTOP)

    def read_again(self) -> None:
        assert self.daemon is not None
        self.daemon.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        for b in self.boards:
            b.stop()
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGCONT)
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
        if self.sub is not None:
            self.sub.close()
        self.broker.stop()
