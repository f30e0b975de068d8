"""The arbiters' audit log: who did what, when, on which board, with the state before and after.

One JSON object per line in ``arbiter-audit.jsonl`` (the broadcast's output directory), appended and flushed
for every action, read back at start, so the log survives restarts and rounds. The console shows the latest
entries and ``GET /api/audit.jsonl`` exports the whole file.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from touchmove.private_files import append_private

log = logging.getLogger(__name__)

KEEP_IN_MEMORY = 2000


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AuditLog:
    """Append-only; ``entries`` holds the latest :data:`KEEP_IN_MEMORY` of them. :meth:`read` gives the log an
    earlier run wrote; making one touches no file."""

    def __init__(self, path: Path, entries: Iterable[dict[str, Any]] = ()) -> None:
        self.path = path
        given = list(entries)
        self._next = 1 + max((e["id"] for e in given if isinstance(e.get("id"), int)), default=0)
        self.entries: list[dict[str, Any]] = given[-KEEP_IN_MEMORY:]

    @classmethod
    def read(cls, path: Path) -> AuditLog:
        """Return the log at ``path`` with what is already in it (nothing when the file does not exist)."""
        entries: list[dict[str, Any]] = []
        try:
            with path.open(encoding="utf-8") as fh:
                for line in fh:
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue  # a line cut by a crash: the rest is still read
                    if isinstance(entry, dict):
                        entries.append(entry)
        except FileNotFoundError:
            pass
        return cls(path, entries)

    def record(self, *, arbiter: str, action: str, board: int | None = None, round_: int | None = None,
               before: Any = None, after: Any = None, ok: bool = True, error: str | None = None,
               detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Append one entry (written before this returns); return it."""
        entry: dict[str, Any] = {"id": self._next, "ts": now_iso(), "arbiter": arbiter, "action": action,
                                 "round": round_, "board": board, "before": before, "after": after, "ok": ok}
        if error:
            entry["error"] = error
        if detail:
            entry["detail"] = detail
        self._next += 1
        self.entries.append(entry)
        del self.entries[:-KEEP_IN_MEMORY]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            append_private(self.path, json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n",
                           sync=True)
        except OSError:
            log.exception("cannot write the audit log %s", self.path)
            entry["unsaved"] = True
        return entry

    def text(self) -> str:
        """The whole log as JSON lines (the file; what is in memory if it cannot be read)."""
        try:
            return self.path.read_text(encoding="utf-8")
        except OSError:
            return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in self.entries)
