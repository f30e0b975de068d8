"""The bridge's SQLite journal."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from touchmove.bridge.journal import Journal


def test_entries_events_and_published_mark(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    j = Journal.open(path)
    j.ensure_board("b1")
    j.add_entry("b1", "record", 10, '{"t":10,"type":"lift","sq":"e2"}', "serial", "ts")
    j.add_entry("b1", "advance", 300, None, "timer", "ts")
    j.add_event("b1", 1, {"type": "move", "game": 1, "ply": 1, "uci": "e2e4"})
    j.add_event("b1", 2, {"type": "alert", "game": 1, "ply": 2, "code": "touch_move"})
    j.update_board("b1", boot="abc", last_seq=7, last_t=300)
    j.mark_published("b1", 1)
    j.commit()
    j.mark_published("b1", 0)          # never moves backwards
    j.commit()
    j.close()

    j = Journal.open(path)
    row = j.board("b1")
    assert row is not None and (row.boot, row.last_seq, row.last_t, row.published) == ("abc", 7, 300, 1)
    assert [e.kind for e in j.entries("b1")] == ["record", "advance"]
    assert j.event_count("b1") == 2
    assert [seq for seq, _ in j.events("b1", after=1)] == [2]
    assert j.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_uncommitted_writes_are_not_seen_by_others(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    j = Journal.open(path)
    j.ensure_board("b1")
    j.commit()
    j.add_event("b1", 1, {"type": "move", "game": 1, "ply": 1})
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    j.commit()
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 1


class FailingDb:
    """A connection whose COMMIT fails while ``fail`` is set (the rest goes to the real one)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.fail: Exception | None = None

    def execute(self, sql: str, params: object = ()) -> sqlite3.Cursor:
        if self.fail is not None and sql == "COMMIT":
            raise self.fail
        return self.db.execute(sql, params)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)


def test_a_failed_commit_rolls_back_holds_the_writes_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    j = Journal.open(path)
    flaky = FailingDb(j.db)
    j.db = flaky  # type: ignore[assignment]
    j.ensure_board("b1")
    j.add_event("b1", 1, {"type": "move", "game": 1, "ply": 1})
    flaky.fail = sqlite3.OperationalError("database or disk is full")
    assert j.commit() is False
    assert j.fault is not None and j.fault.reason == "database or disk is full"
    assert not flaky.db.in_transaction and j.held == 2
    j.add_event("b1", 2, {"type": "move", "game": 1, "ply": 2})
    assert j.commit() is False and j.fault.failures == 2
    assert j.event_count("b1") == 2 and [s for s, _ in j.events("b1")] == [1, 2]    # readable meanwhile
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    flaky.fail = None
    assert j.commit() is True and j.fault is None and j.held == 0
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 2


def test_a_write_that_can_never_succeed_is_dropped_not_blocking(tmp_path: Path) -> None:
    j = Journal.open(tmp_path / "j.sqlite3")
    j.ensure_board("b1")
    j.add_entry("b1", "record", 2**70, "{}", "serial", "ts")          # too big for SQLite
    j.add_event("b1", 1, {"type": "move", "game": 1, "ply": 1})
    j.add_event("b1", 1, {"type": "move", "game": 1, "ply": 1})         # a duplicate key
    assert j.commit() is True and j.poisoned == 2
    assert j.event_count("b1") == 1 and list(j.entries("b1")) == []


def test_held_writes_can_be_dropped_by_kind_and_checkpoints_mark_their_entry(tmp_path: Path) -> None:
    j = Journal.open(tmp_path / "j.sqlite3")
    j.ensure_board("b1")
    j.add_entry("b1", "record", 1, '{"t":1,"type":"lift","sq":"e2"}', "serial", "ts")
    j.commit()
    j.add_entry("b1", "record", 2, '{"t":2,"type":"place","sq":"e4"}', "serial", "ts")
    j.add_event("b1", 1, {"type": "move", "game": 1, "ply": 1})
    dropped = j.drop_held(lambda w: w.kind == "entry")
    assert [w.kind for w in dropped] == ["entry"] and j.held == 1
    j.add_checkpoint("b1", 1, 2, "code", b"state", {"White": "A"}, "ts")
    j.add_entry("b1", "record", 3, '{"t":3,"type":"lift","sq":"e7"}', "serial", "ts")
    assert j.commit()
    cp = j.checkpoint("b1")
    assert cp is not None and (cp.event_seq, cp.code, cp.state, cp.headers) == (1, "code", b"state", {"White": "A"})
    assert [e.t for e in j.entries("b1", after=cp.after_entry)] == [3]     # the entry written after it
    assert [e.t for e in j.entries("b1")] == [1, 3]


def test_a_journal_replaced_under_the_bridge_is_noticed_kept_aside_and_copied(tmp_path: Path) -> None:
    """Someone's file put at the journal's path while it is open: ``replaced``; that file is kept aside, and the
    new journal at the path is a copy of the lost one with the writes it held."""
    from touchmove.bridge.journal_watch import reopen

    path = tmp_path / "j.sqlite3"
    journal = Journal.open(path)
    journal.ensure_board("b1")
    for seq in range(1, 11):
        journal.add_event("b1", seq, {"type": "move", "game": 1, "seq": seq})
    journal.commit()
    assert journal.file_lost() is None
    other = tmp_path / "other"
    other.write_bytes(b"someone's file")
    os.replace(other, path)
    assert journal.file_lost() == "replaced"
    journal.add_event("b1", 11, {"type": "move", "game": 1, "seq": 11})   # held, not yet written
    new, kept, copied = reopen(journal, "replaced")
    assert copied and kept is not None and kept.read_bytes() == b"someone's file"
    assert new.file_lost() is None and new.event_count("b1") == 11
    new.close()
