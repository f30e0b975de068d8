"""The console's events of a round on disk, so that a restarted broadcaster shows the same touch timelines,
alerts, claim windows and acknowledgements as before.

The bridges do not send a board's past events again when the broadcaster restarts (they are not retained:
the retained PGN gives the moves, not the touches). So every event the console keeps is also appended to
``round-<n>-console.jsonl`` in the output directory, with each acknowledgement; the broadcaster reads the
file back when it opens the round. One JSON object per line::

    {"board":4,"event":{"type":"touch","game":1,"ply":5,"sq":"f1","piece":"B","binds":true,"seq":17,"ts":...}}
    {"board":4,"ack":[1,5,"touch_move",19],"by":"Bob Deputy","at":"2026-12-01T22:14:03.118Z"}

Lines are buffered and written by the broadcaster's writer (every ``write_interval``, 0.1 s) and at
shutdown: a crash loses at most the last tenth of a second, which the bridge's journal still has. A line
cut by a crash is skipped when read back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)


class EventArchive:
    """Append-only, buffered; :meth:`read` gives back what an earlier run wrote."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._buffer: list[str] = []
        self._file: IO[str] | None = None
        self._failed = False

    def read(self) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """``(board, line)`` for every readable line, in order (the line has ``event``, or ``ack``)."""
        try:
            fh = self.path.open(encoding="utf-8")
        except OSError:
            return
        with fh:
            for text in fh:
                try:
                    line = json.loads(text)
                except ValueError:
                    continue  # cut by a crash
                if isinstance(line, dict) and type(line.get("board")) is int and (
                        isinstance(line.get("event"), dict) or isinstance(line.get("ack"), list)):
                    yield line["board"], line

    def add_event(self, board: int, event: Mapping[str, Any]) -> None:
        self._buffer.append(json.dumps({"board": board, "event": event}, separators=(",", ":"),
                                       ensure_ascii=False))

    def add_ack(self, board: int, key: Sequence[Any], by: str | None, at: str | None) -> None:
        self._buffer.append(json.dumps({"board": board, "ack": list(key), "by": by, "at": at},
                                       separators=(",", ":"), ensure_ascii=False))
        self.flush()  # an arbiter's act: on disk before the answer

    def flush(self) -> None:
        """Write what is buffered (an error is logged once; the lines are kept for the next try)."""
        if not self._buffer:
            return
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8")
            self._file.write("\n".join(self._buffer) + "\n")
            self._file.flush()
        except OSError as exc:
            if not self._failed:
                log.error("cannot write %s (timelines will not survive a restart): %s", self.path, exc)
                self._failed = True
            del self._buffer[:-100_000]  # bounded while the disk refuses
            return
        self._buffer.clear()
        self._failed = False

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None
