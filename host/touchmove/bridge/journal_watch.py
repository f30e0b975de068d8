"""The journal's file watched while the bridge runs: deleted, moved or replaced (a cleanup script, a mistaken
``rm``, a backup restored over it) is noticed within :data:`JOURNAL_WATCH_S`.

SQLite goes on writing a file deleted under it, so without a watch every later record and event would go to a
file nobody can open again. Once noticed: an error line, a ``journal_replaced`` alert on every board's stream, a
``journal_replaced`` problem on ``bridge/state``, and a new journal at the configured path. The new journal is a
copy of the lost one, read through the connection still open on it (so nothing journaled before is lost); when
that copy fails, it starts empty. Either way every board's engine is checkpointed into it at once, so a restart
resumes each game from the engine's state, and everything published afterwards is journaled there first. A file
someone put at the path (``replaced``) is kept, renamed ``<path>.replaced-<UTC time>``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from pathlib import Path

from touchmove.bridge.journal import Journal, set_aside

log = logging.getLogger("touchmove.bridge")

#: How often the journal's file is looked at (seconds): a stat, nothing more.
JOURNAL_WATCH_S = 1.0


def reopen(lost: Journal, why: str) -> tuple[Journal, Path | None, bool]:
    """Start a new journal at ``lost``'s path (see the module); return it, where a file found at the path went
    (``replaced``: kept aside; else None), and whether the new journal holds a copy of the lost one. The writes
    ``lost`` held are carried over; ``lost`` is closed."""
    path = lost.path
    kept = set_aside(path, "replaced") if why == "replaced" else None
    for suffix in ("-wal", "-shm"):     # a lost journal's own -wal and -shm would be taken for the new one's
        if kept is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")
    lost.commit()                       # what can be written goes to the lost file, and so into the copy
    copied = _copy(lost, path)
    # closed before the new one opens: SQLite removes ``<path>-wal`` by name when its last connection closes
    lost.close()
    journal = Journal.open(path)
    journal.take_held(lost)
    return journal, kept, copied


def _copy(lost: Journal, path: str) -> bool:
    """Copy ``lost`` (its still open connection) to ``path``; return whether it worked (else nothing is at
    ``path``)."""
    partial = f"{path}.copying"
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        target = sqlite3.connect(partial)
        try:
            lost.db.backup(target)
        finally:
            target.close()
        os.replace(partial, path)
        return True
    except (sqlite3.Error, OSError) as exc:
        log.error("journal: the lost journal could not be copied (%s): the new one starts from the engines' state",
                  exc)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        return False
