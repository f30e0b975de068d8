"""Event ``seq`` numbers are never reused for different content: the highest seq offered to MQTT per board is
recorded, in a file beside the journal, *before* the event is offered.

While the journal writes, every event is in the journal before it is offered, and a restart goes on from the
journal's highest seq. While it cannot (a full disk), events are offered from memory: a crash then loses events
that consumers have. The restart goes on past the highest seq recorded here, so the events it makes again (the
board's snapshot recovers the plies, see docs/bridge-faults.md) get new seqs, and a consumer that deduplicates
by seq never drops them.

The file ``<journal>-seqs`` (mode 0600) has fixed slots of :data:`SLOT` bytes, ``<board id padded> <seq>\\n``,
allocated in advance (:data:`PREALLOCATED` slots, more added a block at a time while the disk takes them), and
rewritten in place: a rewrite needs no new block, so it succeeds on a full filesystem. It is synced
(``fdatasync``) only when the event offered is not yet in the journal. A file deleted (or replaced) under a running
bridge is made again with every board's floor (:meth:`SeqFloor.make_again`): a crash would otherwise start from a
missing file and reuse seqs.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from touchmove.bridge.journal import file_identity

log = logging.getLogger("touchmove.bridge")

#: Bytes per board: a 64-character id, a space, 20 digits, padding, a newline.
SLOT = 96
#: Slots written when the file is made (and added at once when they run out).
PREALLOCATED = 256


class SeqFloor:
    """The per-board highest seq offered to MQTT, kept in ``<journal>-seqs``."""

    def __init__(self, journal: str | Path) -> None:
        self.path = Path(f"{journal}-seqs")
        self.seqs: dict[str, int] = {}
        self._slots: dict[str, int] = {}
        self._capacity = 0
        self._fd: int | None = None

    def open(self) -> None:
        """Read the file (made when missing); without it, nothing is offered before the journal has it."""
        try:
            self._open()
        except OSError as exc:
            # Without the file no event is offered before the journal has it (publishing waits for the disk).
            log.error("seq floor %s cannot be opened (%s): events are published only once journaled", self.path, exc)
            self._fd = None

    def _open(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        self._fd = fd
        data = b""
        while chunk := os.pread(fd, 1 << 20, len(data)):
            data += chunk
        self._capacity = len(data) // SLOT
        for index in range(self._capacity):
            raw = data[index * SLOT:(index + 1) * SLOT].rstrip(b"\0 \n")
            if not raw:
                continue
            board, _, seq = raw.decode("ascii", "replace").rpartition(" ")
            board = board.strip()
            if board and seq.isdigit():
                self._slots[board] = index
                self.seqs[board] = max(self.seqs.get(board, 0), int(seq))
        if self._capacity < len(self._slots) + 1:
            self._grow()

    def _grow(self) -> None:
        assert self._fd is not None
        os.pwrite(self._fd, b"\0" * (SLOT * PREALLOCATED), self._capacity * SLOT)
        os.fsync(self._fd)
        self._capacity += PREALLOCATED

    def floor(self, board: str) -> int:
        """Return the highest seq recorded as offered for ``board`` (0: none)."""
        return self.seqs.get(board, 0)

    def record(self, board: str, seq: int, *, durable: bool) -> bool:
        """Record that events of ``board`` up to ``seq`` may be offered; return False when it could not be
        recorded (the caller then offers nothing past the journal). ``durable``: sync before returning."""
        if seq <= self.seqs.get(board, 0):
            return True
        if self._fd is None or len(board.encode()) > SLOT - 23:
            return False
        try:
            self._write(board, seq)
            if durable:
                os.fdatasync(self._fd)
        except OSError as exc:
            log.error("seq floor %s: cannot record seq %d of board %s (%s)", self.path, seq, board, exc)
            return False
        self.seqs[board] = seq
        return True

    def _write(self, board: str, seq: int) -> None:
        """Write ``board``'s slot (a new one when it has none); raise OSError."""
        assert self._fd is not None
        index = self._slots.get(board)
        if index is None:
            index = len(self._slots)
            if index >= self._capacity:
                self._grow()
        line = f"{board} {seq}".encode().ljust(SLOT - 1) + b"\n"
        os.pwrite(self._fd, line, index * SLOT)
        self._slots[board] = index

    def make_again(self) -> bool:
        """When the file at the path is not the one open (deleted with the journal, or replaced): open the file
        there (made when missing; its floors kept when higher), write every board's floor into it, sync it and
        close the old one. Return whether it was done; on an error the old file stays in use (logged)."""
        if self._fd is None:
            return False
        held = os.fstat(self._fd)
        if file_identity(self.path) == (held.st_dev, held.st_ino):
            return False
        old = (self._fd, self._slots, self._capacity)
        self._fd, self._slots, self._capacity = None, {}, 0
        try:
            self._open()
            for board, seq in sorted(self.seqs.items()):
                self._write(board, seq)
            assert self._fd is not None
            os.fsync(self._fd)
        except OSError as exc:
            log.error("seq floor %s cannot be made again (%s): the deleted one is still written", self.path, exc)
            if self._fd is not None:
                os.close(self._fd)
            self._fd, self._slots, self._capacity = old
            return False
        os.close(old[0])
        return True

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
