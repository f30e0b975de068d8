"""What every board protocol's translator shares: the wire protocol v1 lines it makes for the bridge (``hello``,
records, alert lines), host time stamps, and the watch on a board that stops answering.

A translator sits between a port's bytes and the bridge: :meth:`Translator.feed` takes what the board sent and
returns NDJSON lines of protocol v1 (so the bridge, the journal and ``replay`` treat the board as one of
touchmove's own); :meth:`Translator.command` turns the bridge's commands (``hello``, ``snapshot``, ``leds``) into
the board's bytes; :meth:`Translator.tick` is called a few times a second for polls and timers. Translators
are pure: the time comes in as an argument (host milliseconds, times the simulation rate).
"""

from __future__ import annotations

import json
import logging
import os
import time
from abc import ABC, abstractmethod
from typing import Any

from touchmove.boards.adapter import RESULT_STEADY_MS, PieceAdapter, alert_line, board_fen
from touchmove.log_limit import LogLimit

log = logging.getLogger("touchmove.boards")

#: The ``boot`` every translator of this bridge process says in its ``hello``: the host stamps the times, so
#: they run on from one connection to the next as long as the process lives.
HOST_BOOT = f"host-{os.getpid()}-{int(time.time())}"
#: A board silent this long (ms of board time: host ms times the rate) while polled is reported
#: (``board_silent``, with its last position).
SILENT_MS = 6000
#: ... and at least this long in host ms: under a simulation ``rate`` of 8, 6 s of board time are 0.75 s of the
#: host's, which a loaded machine spends between two runs of the timer (or of the simulated board). No real
#: board's link is judged silent on a second of the host's time.
SILENT_HOST_MIN_MS = 2000
#: How often an idle board is polled (ms of board time).
POLL_MS = 2000
#: Longest board id said in a hello.
MAX_ID = 64


def encode_lines(lines: list[dict[str, Any]]) -> list[bytes | None]:
    """Return wire lines (bytes) for the bridge's line decoder."""
    return [json.dumps(line, separators=(",", ":")).encode() for line in lines]


def board_id(prefix: str, name: str) -> str:
    """Return a board id from a prefix and a serial number or port name (no / # +, at most 64 characters)."""
    clean = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-") or "board"
    return f"{prefix}-{clean}"[:MAX_ID]


class ProtocolError(ValueError):
    """Bytes from a board that are not a valid frame (the translator says so and resynchronises)."""


class Translator(ABC):
    """One board's protocol: its bytes in, wire protocol v1 lines out (see the module)."""

    #: serial settings of the protocol (pyserial's names)
    baudrate = 9600
    bytesize = 8
    parity = "N"
    name = "board"
    #: The shortest settle time (ms) the engine may use for this board: a scan slower than the engine's settle
    #: time makes a piece slid over a square look released there.
    min_settle_ms = 0

    def __init__(self, port: str, rate: float = 1.0) -> None:
        self.port = port
        self.rate = rate
        self.adapter = PieceAdapter()
        self.board: str | None = None      # the id once the board is known
        self.last_rx: int | None = None
        self.last_poll = 0
        self.silent = False
        self.errors = 0                    # frames rejected (bad checksum, truncated, garbage)
        self.outbox = bytearray()          # bytes for the board that a reply asked for (see :meth:`drain`)
        self.resyncing = False             # answering again after silence: waiting for its whole position
        self.bad_input_log = LogLimit(log, "bad input from the board")   # a flood of garbage: a few lines
        self.unknown_skipped = 0           # well-framed messages of kinds not known here, skipped

    # -- the interface ---------------------------------------------------------------------------------------
    @abstractmethod
    def start(self, now: int) -> bytes:
        """Return the bytes that set the board up when its port opens."""

    @abstractmethod
    def feed(self, data: bytes, now: int) -> list[dict[str, Any]]:
        """Take bytes from the board; return the wire lines they make."""

    @abstractmethod
    def command(self, cmd: dict[str, Any], now: int) -> bytes:
        """Return the bytes for one of the bridge's commands (b"" when the board has no use for it)."""

    @abstractmethod
    def poll(self) -> bytes:
        """Return the bytes of a harmless request that the board answers (the watch on a silent board)."""

    def drain(self) -> bytes:
        """Return (and forget) the bytes the translator wants sent after :meth:`feed`."""
        out = bytes(self.outbox)
        self.outbox.clear()
        return out

    def tick(self, now: int) -> tuple[list[dict[str, Any]], bytes]:
        """Return the lines timers release and the bytes to send (a poll of an idle board)."""
        lines = self.adapter.tick(now, self.last_rx) if self.adapter.synced else []
        self.bad_input_log.flush()
        out = b""
        # a result read from the pieces waits for the board to say anything after it has stood: asked at once
        confirm = self.adapter.confirmation_wanted(now) and \
            self.last_poll < self.adapter.reading_since + RESULT_STEADY_MS
        if self.last_rx is not None and (confirm or now - max(self.last_rx, self.last_poll) >= POLL_MS):
            self.last_poll = now
            out = self.poll()
        if self.last_rx is not None and now - self.last_rx >= self.silent_after() and not self.silent:
            self.silent = True
            lines.append(alert_line("board_silent", max(now, self.adapter.last_t),
                                    message=f"the board on {self.port} stopped answering",
                                    port=self.port, last_position=board_fen(self.adapter.shown),
                                    silent_ms=int(now - self.last_rx)))
            log.warning("%s on %s stopped answering", self.board or self.name, self.port)
        return lines, out

    def silent_after(self) -> float:
        """Return how long (ms of board time) a board may say nothing before it is reported silent."""
        return max(SILENT_MS, SILENT_HOST_MIN_MS * self.rate)

    # -- shared parts ----------------------------------------------------------------------------------------
    def heard(self, now: int) -> list[dict[str, Any]]:
        """Note that the board said something; return the lines that says (answering again after silence)."""
        self.last_rx = now
        if not self.silent:
            return []
        self.silent = False
        self.resyncing = True              # what it says before its whole position is diffed, not piecemeal
        self.outbox += self.resume()
        log.info("%s on %s answers again", self.board or self.name, self.port)
        return [alert_line("board_answering", max(now, self.adapter.last_t), port=self.port,
                           message=f"the board on {self.port} answers again")]

    def skipped_unknown(self, total: int, now: int) -> list[dict[str, Any]]:
        """Note the decoder's count of well-framed messages of unknown kinds (skipped: a newer board's); return
        the lines that says (the board is alive: see :meth:`heard`)."""
        if total <= self.unknown_skipped:
            return []
        if not self.unknown_skipped:
            log.info("%s on %s: messages of a kind not known here skipped (counted)", self.board or self.name,
                     self.port)
        self.unknown_skipped = total
        return self.heard(now)

    def resume(self) -> bytes:
        """Return the bytes that set a board up again after it was silent (it may have been reset)."""
        return b""

    def hello(self, board: str, now: int, **fields: Any) -> dict[str, Any]:
        """Return the ``hello`` line that binds this port to ``board`` in the bridge."""
        self.board = board
        return {"t": max(now, self.adapter.last_t), "type": "hello", "board": board, "proto": 1,
                "boot": HOST_BOOT, "rate": self.rate, "via": self.name, **fields}

    def rejected(self, why: str, now: int) -> dict[str, Any]:
        """Count a rejected frame; return the ``error`` line that reports it (the bridge logs it)."""
        self.errors += 1
        self.bad_input_log.log(logging.WARNING, self.port, "%s on %s: %s", self.board or self.name, self.port, why)
        return {"t": max(now, self.adapter.last_t), "type": "error", "why": why}
