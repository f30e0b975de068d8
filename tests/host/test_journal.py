"""The bridge's SQLite journal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from touchmove.journal import Journal


def test_entries_events_and_published_mark(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    j = Journal(path)
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

    j = Journal(path)
    row = j.board("b1")
    assert row is not None and (row.boot, row.last_seq, row.last_t, row.published) == ("abc", 7, 300, 1)
    assert [e.kind for e in j.entries("b1")] == ["record", "advance"]
    assert j.event_count("b1") == 2
    assert [seq for seq, _ in j.events("b1", after=1)] == [2]
    assert j.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_uncommitted_writes_are_not_seen_by_others(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    j = Journal(path)
    j.ensure_board("b1")
    j.commit()
    j.add_event("b1", 1, {"type": "move", "game": 1, "ply": 1})
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    j.commit()
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 1
