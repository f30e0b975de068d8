"""The bridge's journal: every raw record and engine event per board, in SQLite (WAL).

Each board has an ordered list of *entries*: the records fed to its engine (from the serial line or from an
operator command, in the recording format, on the board's monotonic time) and the ``advance`` calls made when
device time passed without a record. The engine is deterministic, so replaying a board's entries rebuilds its
engine exactly. Events are stored with a per-board ``seq`` and published ones are acknowledged by moving the
board's ``published`` mark: after a crash, the daemon publishes exactly the events past that mark.

Writes are held in memory, in order, until :meth:`Journal.commit` writes them in one transaction and makes them
durable (WAL with ``synchronous=NORMAL`` survives the process being killed). The bridge commits before it
publishes anything a batch produced.

A write error (disk full, I/O error, a lock held by another program: any :class:`sqlite3.Error` from the
database) rolls the transaction back and leaves the writes held: :attr:`Journal.fault` says why and since when,
and the next :meth:`commit` tries again. A write that can never succeed (a value SQLite cannot store, a
duplicate key) is dropped with an error log line instead of blocking the ones behind it. How many writes may
be held, and what is given up when that bound is hit, is the bridge's policy (:meth:`Journal.drop_held`).

*Checkpoints* keep a board's engine (pickled and signed with the installation's checkpoint key, see
:mod:`touchmove.bridge.checkpoint`), with the PGN headers, the settle time and the last entry it includes, so a restart
replays only the entries after it; a checkpoint is read back only when its signature holds and the same rules
code wrote it. The settle time and the headers are plain columns: a replay that cannot use the engine still has
them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Writes per transaction when held writes are written after a fault (the first one is the probe).
CHUNK = 2000
#: How long a write waits for a lock held by another connection (seconds); the event loop waits with it.
BUSY_TIMEOUT_S = 0.2

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
    kind    TEXT NOT NULL,          -- 'record', 'advance', 'meta', 'gap' or 'settle' (the engine's settle ms)
    t       INTEGER NOT NULL,       -- the board's monotonic time
    body    TEXT,                   -- the record as a JSON line, or meta as JSON
    source  TEXT NOT NULL,          -- 'serial', 'operator', 'timer' or 'broker'
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
CREATE TABLE IF NOT EXISTS checkpoints (
    board       TEXT PRIMARY KEY,
    after_entry INTEGER NOT NULL,   -- the board's last entry id the engine state includes
    event_seq   INTEGER NOT NULL,   -- events the board had produced then
    t           INTEGER NOT NULL,
    code        TEXT NOT NULL,      -- fingerprint of the rules code that pickled the state
    state       BLOB NOT NULL,      -- the pickled engine
    headers     TEXT NOT NULL,      -- PGN headers from 'meta' entries up to then (JSON)
    ts          TEXT NOT NULL,
    settle_ms   INTEGER,            -- the settle time the engine ran with
    mac         TEXT                -- HMAC-SHA256 of the state (touchmove.bridge.checkpoint); NULL: never unpickled
);
"""

#: Errors that one write causes by itself (retrying cannot help): the write is dropped and logged.
POISON = (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError, sqlite3.DataError,
          OverflowError, ValueError, TypeError)


def is_malformed(exc: BaseException) -> bool:
    """Return whether an SQLite error says the file is damaged (not a fault that passes, like a lock)."""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text
                                                       or "corrupt" in text)


#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\0"


def is_sqlite_file(path: str | Path) -> bool:
    """Return whether ``path`` starts as an SQLite database does (a damaged journal, not some other file)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def file_identity(path: str | Path) -> tuple[int, int] | None:
    """Return the (device, inode) of the file at ``path``, or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def set_aside(path: str | Path, why: str = "malformed") -> Path:
    """Rename a damaged journal (and its -wal and -shm files) to ``<path>.<why>-<UTC time>``; return the
    new name. The bridge then starts a new journal: a damaged file never stops a hall."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = Path(f"{path}.{why}-{stamp}")
    for suffix in ("-wal", "-shm", ""):
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{path}{suffix}", f"{target}{suffix}")
    return target


def open_checked(path: str | Path) -> tuple[Journal, Path | None]:
    """Open a journal; when SQLite reports it damaged, set it aside and open a new one. Return the journal and
    where the damaged one went (None: it was sound). A file that is not an SQLite database at all raises
    :class:`sqlite3.DatabaseError` (it is someone's file at a wrong path: it is left alone)."""
    try:
        journal = Journal.open(path)
        try:
            journal.sanity_check()
        except BaseException:
            journal.db.close()
            raise
        return journal, None
    except sqlite3.DatabaseError as exc:
        if not is_malformed(exc) or not is_sqlite_file(path):
            raise       # not a journal at all (a wrong path in the configuration): never renamed, the caller says so
        target = set_aside(path)
        log.error("journal %s is damaged (%s): kept as %s, a new journal is started", path, exc, target)
        return Journal.open(path), target


@dataclass(frozen=True)
class Entry:
    kind: str
    t: int
    body: str | None
    source: str


@dataclass(frozen=True)
class Checkpoint:
    after_entry: int
    event_seq: int
    t: int
    code: str
    state: bytes
    headers: dict[str, str]
    settle_ms: int | None = None
    mac: str | None = None


@dataclass
class JournalFault:
    """Why the journal cannot write, since when (UTC ISO-8601), and how many attempts failed."""

    reason: str
    since: str
    failures: int = 1


@dataclass(slots=True)
class HeldWrite:
    """One write waiting for a commit: ``kind`` is entry, event, board or checkpoint."""

    kind: str
    board: str
    sql: str
    params: tuple[Any, ...]
    seq: int = 0


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

    def __init__(self, path: str | Path, db: sqlite3.Connection) -> None:
        """Wrap ``db``, the journal at ``path`` as :meth:`open` opened it (use that)."""
        self.path = str(path)
        self.db = db
        self.fault: JournalFault | None = None
        self.poisoned = 0                           # writes dropped because they could never succeed
        self._open: list[HeldWrite] = []            # writes since the last commit
        self._batches: deque[list[HeldWrite]] = deque()   # committed by the caller, not yet written
        self._held_events: dict[str, dict[int, str]] = {}  # board -> seq -> payload, for reads meanwhile
        self.held = 0
        self._checkpointer: threading.Thread | None = None
        self._closing = threading.Event()
        # entry ids are given here, not by SQLite, so a checkpoint can say (and sign) the last one it includes
        self.last_entry_id = 0
        #: The file's (device, inode) when opened: another at ``path`` later means it was moved or replaced.
        self.identity = file_identity(self.path)

    @classmethod
    def open(cls, path: str | Path) -> Journal:
        """Open the journal at ``path``, made (mode 0600) when missing, its tables brought up to date."""
        path = str(path)
        # created readable by its owner only (games, names, arbiter actions); SQLite gives -wal/-shm the same mode
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            journal = cls(path, db)
            journal._add_missing_columns()
            journal.last_entry_id = int(db.execute("SELECT COALESCE(MAX(id), 0) FROM entries").fetchone()[0])
            with contextlib.suppress(sqlite3.Error):   # AUTOINCREMENT's own counter, if ids were ever higher
                row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").fetchone()
                if row is not None:
                    journal.last_entry_id = max(journal.last_entry_id, int(row[0]))
        except BaseException:
            db.close()
            raise
        return journal

    def sanity_check(self) -> None:
        """Read every table's index and last rows (what a restart reads first); raise sqlite3.DatabaseError when
        SQLite finds the file damaged."""
        for table in ("boards", "entries", "events", "checkpoints"):
            self.db.execute(f"SELECT * FROM {table} ORDER BY rowid DESC LIMIT 1").fetchall()
        self.db.execute("SELECT board, MAX(seq) FROM events GROUP BY board").fetchall()
        self.db.execute("SELECT board, MAX(id) FROM entries GROUP BY board").fetchall()

    def _add_missing_columns(self) -> None:
        """Give a journal written by an older version the checkpoint columns it lacks (its checkpoints, unsigned,
        are then ignored once and replaced)."""
        have = {row[1] for row in self.db.execute("PRAGMA table_info(checkpoints)")}
        for name, kind in (("settle_ms", "INTEGER"), ("mac", "TEXT")):
            if name not in have:
                self.db.execute(f"ALTER TABLE checkpoints ADD COLUMN {name} {kind}")

    def checkpoint_in_background(self, every_s: float = 5.0) -> None:
        """Move the WAL into the database from a thread of its own, instead of inside a commit.

        SQLite checkpoints (and syncs the file) inside whichever commit crosses the WAL's size threshold; on a
        busy bridge that commit stalls the event loop for milliseconds. A passive checkpoint from another
        connection never blocks the writer. A failing checkpoint (a full disk) is retried at the next turn.
        """
        self.db.execute("PRAGMA wal_autocheckpoint=0")

        def run() -> None:
            other = sqlite3.connect(self.path, check_same_thread=False)
            try:
                while not self._closing.wait(every_s):
                    try:
                        other.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    except sqlite3.Error as exc:
                        log.warning("journal: WAL checkpoint failed (%s)", exc)
            finally:
                other.close()

        self._checkpointer = threading.Thread(target=run, name="journal checkpoint", daemon=True)
        self._checkpointer.start()

    # -- committing ---------------------------------------------------------------------------------------
    def commit(self, max_chunks: int | None = None) -> bool:
        """Write every held write, in order; return True when none is left and the database took them.

        Writes are grouped in transactions of about :data:`CHUNK` writes, each ending where a caller's
        commit ended (a crash leaves a journal as it was after one of them). ``max_chunks`` bounds the work
        of one call. On a database error the transaction is rolled back, the writes stay held,
        :attr:`fault` says why and False is returned.
        """
        if self._open:
            self._batches.append(self._open)
            self._open = []
        chunks = 0
        while self._batches:
            if max_chunks is not None and chunks >= max_chunks:
                return False
            count = size = 0
            for batch in self._batches:
                count += 1
                size += len(batch)
                if size >= CHUNK:
                    break
            try:
                self._write([self._batches[i] for i in range(count)])
            except sqlite3.Error as exc:
                self._failed(exc)
                return False
            for _ in range(count):
                self._forget(self._batches.popleft())
            chunks += 1
        if self.fault is not None:
            log.warning("journal: writing again after %d failed attempt(s) since %s (%s)",
                        self.fault.failures, self.fault.since, self.fault.reason)
            self.fault = None
        return True

    def _write(self, batches: list[list[HeldWrite]]) -> None:
        db = self.db
        try:
            db.execute("BEGIN")
            for batch in batches:
                for write in batch:
                    try:
                        db.execute(write.sql, write.params)
                    except POISON as exc:
                        self.poisoned += 1
                        log.error("journal: %s write for board %s dropped (%s): %.120r", write.kind, write.board,
                                  exc, write.params)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                try:
                    db.execute("ROLLBACK")
                except sqlite3.Error:
                    log.debug("journal: rollback failed", exc_info=True)
            raise

    def _failed(self, exc: sqlite3.Error) -> None:
        reason = str(exc) or type(exc).__name__
        if self.fault is None:
            self.fault = JournalFault(reason, datetime.now(UTC).isoformat(timespec="seconds"))
            log.error("journal: cannot write %s (%s); %d write(s) held in memory", self.path, reason, self.held)
        else:
            self.fault.failures += 1
            self.fault.reason = reason

    def _forget(self, batch: list[HeldWrite]) -> None:
        self.held -= len(batch)
        for write in batch:
            if write.kind == "event":
                held = self._held_events.get(write.board)
                if held is not None:
                    held.pop(write.seq, None)
                    if not held:
                        del self._held_events[write.board]

    def drop_held(self, drop: Callable[[HeldWrite], bool]) -> list[HeldWrite]:
        """Remove the held writes ``drop`` selects (the bridge's policy when too many are held); return them."""
        dropped: list[HeldWrite] = []
        batches: deque[list[HeldWrite]] = deque()
        for batch in [*self._batches, self._open]:
            keep: list[HeldWrite] = []
            for write in batch:
                (dropped if drop(write) else keep).append(write)
            if keep:
                batches.append(keep)
        self._open = []
        self._batches = batches
        self._forget(dropped)
        return dropped

    def held_writes(self) -> Iterator[HeldWrite]:
        """Yield the writes not yet in the database, oldest first."""
        for batch in self._batches:
            yield from batch
        yield from self._open

    def file_lost(self) -> str | None:
        """Return how the journal's file left ``path`` while open (``"deleted or moved"``, ``"replaced"``), or
        None while it is still there. SQLite goes on writing a deleted file: nothing but this says so."""
        now = file_identity(self.path)
        if now == self.identity:
            return None
        return "deleted or moved" if now is None else "replaced"

    def take_held(self, other: Journal) -> None:
        """Take over the writes ``other`` holds (not yet written), to be written here at the next commit."""
        self._batches.extend(other._batches)
        if other._open:
            self._batches.append(other._open)
        for board, held in other._held_events.items():
            self._held_events.setdefault(board, {}).update(held)
        self.held += other.held
        self.last_entry_id = max(self.last_entry_id, other.last_entry_id)
        other._batches, other._open, other._held_events, other.held = deque(), [], {}, 0

    def close(self) -> None:
        if not self.commit():
            log.error("journal: closing with %d write(s) not written (%s)", self.held,
                      self.fault.reason if self.fault else "?")
        self._closing.set()
        if self._checkpointer is not None:
            self._checkpointer.join(5)
        self.db.close()

    # -- writes (held until the next commit) ---------------------------------------------------------------
    def _hold(self, write: HeldWrite) -> None:
        self._open.append(write)
        self.held += 1

    def ensure_board(self, board: str) -> None:
        self._hold(HeldWrite("board", board, "INSERT OR IGNORE INTO boards(board) VALUES (?)", (board,)))

    def update_board(self, board: str, **fields: Any) -> None:
        allowed = {"boot", "last_seq", "t_offset", "last_t", "published", "port"}
        if not fields or set(fields) - allowed:
            raise ValueError(f"bad board fields: {sorted(fields)}")
        sets = ", ".join(f"{name} = ?" for name in fields)
        self._hold(HeldWrite("board", board, f"UPDATE boards SET {sets} WHERE board = ?",
                             (*fields.values(), board)))

    def add_entry(self, board: str, kind: str, t: int, body: str | None, source: str, ts: str) -> int:
        """Hold one entry; return its id."""
        self.last_entry_id += 1
        self._hold(HeldWrite("entry", board,
                             "INSERT INTO entries(board, kind, t, body, source, ts, id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (board, kind, t, body, source, ts, self.last_entry_id)))
        return self.last_entry_id

    def add_event(self, board: str, seq: int, payload: dict[str, Any]) -> None:
        ply = payload.get("ply")
        body = json.dumps(payload, separators=(",", ":"))
        self._hold(HeldWrite("event", board,
                             "INSERT INTO events(board, seq, game, type, ply, payload) VALUES (?, ?, ?, ?, ?, ?)",
                             (board, seq, payload.get("game", 0), payload["type"],
                              ply if isinstance(ply, int) else None, body), seq))
        self._held_events.setdefault(board, {})[seq] = body

    def mark_published(self, board: str, seq: int) -> None:
        """Acknowledge every event of ``board`` up to ``seq`` as published (never moves backwards)."""
        self._hold(HeldWrite("board", board, "UPDATE boards SET published = MAX(published, ?) WHERE board = ?",
                             (seq, board)))

    def add_checkpoint(self, board: str, event_seq: int, t: int, code: str, state: bytes,
                       headers: dict[str, str], ts: str, *, settle_ms: int | None = None,
                       mac: str | None = None, after_entry: int | None = None) -> None:
        """Keep a board's engine state; it includes every entry of the board up to ``after_entry`` (default:
        every entry held so far, :attr:`last_entry_id`)."""
        after = self.last_entry_id if after_entry is None else after_entry
        self._hold(HeldWrite(
            "checkpoint", board,
            "INSERT OR REPLACE INTO checkpoints(board, after_entry, event_seq, t, code, state, headers, ts, "
            "settle_ms, mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (board, after, event_seq, t, code, state, json.dumps(headers), ts, settle_ms, mac)))

    # -- reads --------------------------------------------------------------------------------------------
    def boards(self) -> list[BoardRow]:
        rows = self.db.execute(
            "SELECT board, boot, last_seq, t_offset, last_t, published, port FROM boards ORDER BY board")
        return [BoardRow(*row) for row in rows]

    def board(self, board: str) -> BoardRow | None:
        row = self.db.execute("SELECT board, boot, last_seq, t_offset, last_t, published, port FROM boards "
                              "WHERE board = ?", (board,)).fetchone()
        return BoardRow(*row) if row else None

    def settle_ms(self, board: str) -> int | None:
        """Return the settle time the bridge last ran ``board``'s engine with (its last ``settle`` entry), or None
        (a journal written before those entries)."""
        row = self.db.execute("SELECT body FROM entries WHERE board = ? AND kind = 'settle' ORDER BY id DESC LIMIT 1",
                              (board,)).fetchone()
        try:
            return int(row[0]) if row else None
        except (TypeError, ValueError):
            return None

    def entries(self, board: str, after: int = 0) -> Iterator[Entry]:
        """Yield a board's written entries with id > ``after``, in order."""
        rows = self.db.execute("SELECT kind, t, body, source FROM entries WHERE board = ? AND id > ? ORDER BY id",
                               (board, after))
        for kind, t, body, source in rows:
            yield Entry(kind, t, body, source)

    def checkpoint(self, board: str) -> Checkpoint | None:
        """Return the board's latest written checkpoint, or None."""
        row = self.db.execute("SELECT after_entry, event_seq, t, code, state, headers, settle_ms, mac "
                              "FROM checkpoints WHERE board = ?", (board,)).fetchone()
        if row is None:
            return None
        try:
            headers = json.loads(row[5])
            if not isinstance(headers, dict):
                raise ValueError("not an object")
            return Checkpoint(int(row[0]), int(row[1]), int(row[2]), str(row[3]), bytes(row[4]),
                              {str(k): str(v) for k, v in headers.items()},
                              row[6] if isinstance(row[6], int) else None, row[7] if isinstance(row[7], str) else None)
        except (TypeError, ValueError) as exc:
            log.warning("journal: board %s: checkpoint row unreadable (%s); ignored", board, exc)
            return None

    def holds_events(self, board: str) -> bool:
        """Return whether events of ``board`` wait in memory (not yet in the database)."""
        return bool(self._held_events.get(board))

    def event_count(self, board: str) -> int:
        """Return the highest event seq of a board, held events included."""
        row = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE board = ?", (board,)).fetchone()
        held = self._held_events.get(board)
        return max(int(row[0]), max(held) if held else 0)

    def events(self, board: str, after: int = 0, limit: int = -1) -> list[tuple[int, str]]:
        """Return ``(seq, payload JSON)`` of a board's events with seq > ``after``, in order (held ones too)."""
        rows = self.db.execute("SELECT seq, payload FROM events WHERE board = ? AND seq > ? ORDER BY seq "
                               "LIMIT ?", (board, after, limit))
        out = [(int(seq), str(payload)) for seq, payload in rows]
        held = self._held_events.get(board)
        if held and (limit < 0 or len(out) < limit):
            last = out[-1][0] if out else after
            more = sorted((seq, body) for seq, body in held.items() if seq > last)
            out += more if limit < 0 else more[:limit - len(out)]
        return out
