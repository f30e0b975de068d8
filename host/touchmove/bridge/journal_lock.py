"""One journal, one bridge: an exclusive lock on ``<journal>.lock`` held for the bridge's lifetime.

Two bridges on one journal would both answer every command (a takeback done twice) and publish over each other.
The lock is ``flock`` on a file beside the journal (released by the kernel when the process dies, so a ``kill -9``
never leaves a stale lock); the file says who holds it (host, process id, session, since when), which a second
bridge names in its one-line refusal. A lock file deleted (or replaced) under a running bridge is made again
(:meth:`JournalLock.take_again`): a second bridge would otherwise lock a new file at the path and run beside it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from pathlib import Path

from touchmove.bridge.journal import file_identity
from touchmove.mqtt.wire import iso_now


class JournalLocked(RuntimeError):
    """Another bridge holds the journal; the message names it."""


class JournalLock:
    """The lock of one journal; :meth:`acquire` takes it or raises :class:`JournalLocked`."""

    def __init__(self, journal: str | Path) -> None:
        self.path = Path(f"{journal}.lock")
        self._fd: int | None = None
        self._session = ""

    def acquire(self, session: str) -> None:
        """Take the lock for this process, or raise :class:`JournalLocked` naming the holder."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            os.close(fd)
            raise JournalLocked(f"journal {str(self.path)[:-5]} is in use by another bridge ({holder}); "
                                "one journal serves one bridge") from None
        except BaseException:
            os.close(fd)
            raise
        info = {"host": socket.gethostname(), "pid": os.getpid(), "session": session, "since": iso_now()}
        with contextlib.suppress(OSError):      # who holds it is a courtesy: a full disk must not stop the start
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        self._fd, self._session = fd, session

    def held_at_path(self) -> bool:
        """Return whether the file at the lock's path is the one this process holds locked."""
        if self._fd is None:
            return False
        held = os.fstat(self._fd)
        return file_identity(self.path) == (held.st_dev, held.st_ino)

    def take_again(self) -> bool:
        """Lock a new file at the path when the one there is not the one held (deleted with the journal, or
        replaced), then let the old one go; return whether it was done (False: the lock is not held, or is the
        file at the path). Raise :class:`JournalLocked` when another bridge locked the new file first (the old
        one is still held)."""
        if self._fd is None or self.held_at_path():
            return False
        old, self._fd = self._fd, None
        try:
            self.acquire(self._session)
        except BaseException:
            self._fd = old
            raise
        os.close(old)
        return True

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            info = json.loads(os.pread(fd, 4096, 0) or b"{}")
            return (f"process {int(info['pid'])} on {str(info['host'])[:64]}, session {str(info['session'])[:32]}, "
                    f"since {str(info['since'])[:32]}")
        except (OSError, ValueError, KeyError, TypeError):
            return "holder unknown"

    def release(self) -> None:
        """Let the lock go (shutdown)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
