"""The bridge's journal: every raw record and engine event per board, in SQLite (WAL).

Each board has an ordered list of *entries*: the records fed to its engine (from the serial line or from an
operator command, in the recording format, on the board's monotonic time) and the ``advance`` calls made when
device time passed without a record. The engine is deterministic, so replaying a board's entries rebuilds its
engine exactly. Events are stored with a per-board ``seq`` and published ones are acknowledged by moving the
board's ``published`` mark: after a crash, the daemon publishes exactly the events past that mark.

Writes go into an open transaction; :meth:`Journal.commit` makes them durable (WAL with ``synchronous=NORMAL``
survives the process being killed). The bridge commits before it publishes anything a batch produced.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS boards (
    board      TEXT PRIMARY KEY,
    boot       TEXT,
    last_seq   INTEGER,
    t_offset   INTEGER NOT NULL DEFAULT 0,
    last_t     INTEGER NOT NULL DEFAULT 0,
    published  INTEGER NOT NULL DEFAULT 0,
    port       TEXT
);
CREATE TABLE IF NOT EXISTS entries (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    board   TEXT NOT NULL,
    kind    TEXT NOT NULL,          -- 'record', 'advance' or 'meta'
    t       INTEGER NOT NULL,       -- the board's monotonic time
    body    TEXT,                   -- the record as a JSON line, or meta as JSON
    source  TEXT NOT NULL,          -- 'serial', 'operator' or 'timer'
    ts      TEXT NOT NULL           -- host UTC time it was journaled
);
CREATE INDEX IF NOT EXISTS entries_board ON entries(board, id);
CREATE TABLE IF NOT EXISTS events (
    board   TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    game    INTEGER NOT NULL,
    type    TEXT NOT NULL,
    ply     INTEGER,
    payload TEXT NOT NULL,          -- the JSON published on <base>/boards/<id>/events
    PRIMARY KEY (board, seq)
);
"""


@dataclass(frozen=True)
class Entry:
    kind: str
    t: int
    body: str | None
    source: str


@dataclass
class BoardRow:
    board: str
    boot: str | None
    last_seq: int | None
    t_offset: int
    last_t: int
    published: int
    port: str | None


class Journal:
    """One SQLite file; used from one thread (the bridge's event loop)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        # created readable by its owner only (games, names, arbiter actions); SQLite gives -wal/-shm the same mode
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self._in_tx = False
        self._checkpointer: threading.Thread | None = None
        self._closing = threading.Event()

    def checkpoint_in_background(self, every_s: float = 5.0) -> None:
        """Move the WAL into the database from a thread of its own, instead of inside a commit.

        SQLite checkpoints (and syncs the file) inside whichever commit crosses the WAL's size threshold; on a
        busy bridge that commit stalls the event loop for milliseconds. A passive checkpoint from another
        connection never blocks the writer.
        """
        self.db.execute("PRAGMA wal_autocheckpoint=0")

        def run() -> None:
            other = sqlite3.connect(self.path, check_same_thread=False)
            try:
                while not self._closing.wait(every_s):
                    other.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                other.close()

        self._checkpointer = threading.Thread(target=run, name="journal checkpoint", daemon=True)
        self._checkpointer.start()

    def _begin(self) -> None:
        if not self._in_tx:
            self.db.execute("BEGIN")
            self._in_tx = True

    def commit(self) -> None:
        """Make every write since the last commit durable."""
        if self._in_tx:
            self.db.execute("COMMIT")
            self._in_tx = False

    def close(self) -> None:
        self.commit()
        self._closing.set()
        if self._checkpointer is not None:
            self._checkpointer.join(5)
        self.db.close()

    # -- writes -------------------------------------------------------------------------------------------
    def ensure_board(self, board: str) -> None:
        self._begin()
        self.db.execute("INSERT OR IGNORE INTO boards(board) VALUES (?)", (board,))

    def update_board(self, board: str, **fields: Any) -> None:
        allowed = {"boot", "last_seq", "t_offset", "last_t", "published", "port"}
        if not fields or set(fields) - allowed:
            raise ValueError(f"bad board fields: {sorted(fields)}")
        self._begin()
        sets = ", ".join(f"{name} = ?" for name in fields)
        self.db.execute(f"UPDATE boards SET {sets} WHERE board = ?", (*fields.values(), board))

    def add_entry(self, board: str, kind: str, t: int, body: str | None, source: str, ts: str) -> None:
        self._begin()
        self.db.execute("INSERT INTO entries(board, kind, t, body, source, ts) VALUES (?, ?, ?, ?, ?, ?)",
                        (board, kind, t, body, source, ts))

    def add_event(self, board: str, seq: int, payload: dict[str, Any]) -> None:
        self._begin()
        ply = payload.get("ply")
        self.db.execute("INSERT INTO events(board, seq, game, type, ply, payload) VALUES (?, ?, ?, ?, ?, ?)",
                        (board, seq, payload.get("game", 0), payload["type"],
                         ply if isinstance(ply, int) else None, json.dumps(payload, separators=(",", ":"))))

    def mark_published(self, board: str, seq: int) -> None:
        """Acknowledge every event of ``board`` up to ``seq`` as published (never moves backwards)."""
        self._begin()
        self.db.execute("UPDATE boards SET published = MAX(published, ?) WHERE board = ?", (seq, board))

    # -- reads --------------------------------------------------------------------------------------------
    def boards(self) -> list[BoardRow]:
        rows = self.db.execute(
            "SELECT board, boot, last_seq, t_offset, last_t, published, port FROM boards ORDER BY board")
        return [BoardRow(*row) for row in rows]

    def board(self, board: str) -> BoardRow | None:
        row = self.db.execute("SELECT board, boot, last_seq, t_offset, last_t, published, port FROM boards "
                              "WHERE board = ?", (board,)).fetchone()
        return BoardRow(*row) if row else None

    def entries(self, board: str) -> Iterator[Entry]:
        rows = self.db.execute("SELECT kind, t, body, source FROM entries WHERE board = ? ORDER BY id",
                               (board,))
        for kind, t, body, source in rows:
            yield Entry(kind, t, body, source)

    def event_count(self, board: str) -> int:
        row = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE board = ?", (board,)).fetchone()
        return int(row[0])

    def events(self, board: str, after: int = 0, limit: int = -1) -> list[tuple[int, str]]:
        """Return ``(seq, payload JSON)`` of a board's events with seq > ``after``, in order."""
        rows = self.db.execute("SELECT seq, payload FROM events WHERE board = ? AND seq > ? ORDER BY seq "
                               "LIMIT ?", (board, after, limit))
        return [(int(seq), str(payload)) for seq, payload in rows]
