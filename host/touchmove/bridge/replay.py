"""Rebuild a board's engine from the journal: from its latest checkpoint when that can be trusted, else from the
board's first entry. The engine is deterministic, so a replay gives back exactly the engine that wrote the
journal; ``touchmove run`` resumes this way and ``touchmove export`` writes its PGN this way."""

from __future__ import annotations

import json
import logging

from touchmove import records
from touchmove.bridge import checkpoint
from touchmove.bridge.journal import Journal
from touchmove.rules import Engine
from touchmove.rules.engine import DEFAULT_SETTLE_MS

log = logging.getLogger("touchmove.bridge")

#: The longest settle time a journal's checkpoint row is believed (the configuration's bound too).
MAX_SETTLE_MS = 5000


def replay_entries(journal: Journal, board: str, settle_ms: int | None, *, use_checkpoint: bool = True,
                   key: checkpoint.CheckpointKey | None = None) -> tuple[Engine, int, dict[str, str]]:
    """Rebuild a board's engine from its journal; return it, the number of events it has given, and PGN headers.

    ``settle_ms`` None takes the settle time the bridge ran with (its last ``settle`` entry, else the checkpoint's
    column, else the default).
    The latest checkpoint is used when ``key`` verifies it (see :mod:`touchmove.bridge.checkpoint`), this code wrote
    it and its settle time is the one wanted; else it is ignored with one log line and every entry replayed.
    """
    cp = journal.checkpoint(board) if use_checkpoint else None
    recorded = journal.settle_ms(board) if settle_ms is None else None
    if settle_ms is None and recorded is not None and 0 <= recorded <= MAX_SETTLE_MS:
        settle_ms = recorded
    elif settle_ms is None:
        settle_ms = DEFAULT_SETTLE_MS
        if cp is not None and cp.settle_ms is not None:
            if 0 <= cp.settle_ms <= MAX_SETTLE_MS:
                settle_ms = cp.settle_ms
            else:
                log.warning("board %s: the journal's settle time %r is out of range; replaying with %d ms", board,
                            cp.settle_ms, settle_ms)
    engine = Engine(settle_ms=settle_ms)
    count = 0
    headers: dict[str, str] = {}
    after = 0
    if cp is not None:
        if cp.settle_ms != settle_ms:
            log.info("board %s: checkpoint made with another settle time; replaying the whole journal", board)
        else:
            try:
                engine = checkpoint.load(key, board, cp.code, settle_ms, cp.event_seq, cp.state, cp.mac,
                                         cp.after_entry, cp.headers)
                count, headers, after = cp.event_seq, dict(cp.headers), cp.after_entry
            except checkpoint.CheckpointRejected as exc:
                log.warning("board %s: checkpoint ignored: %s; replaying the whole journal", board, exc)
    for entry in journal.entries(board, after=after):
        try:
            if entry.kind == "record" and entry.body:
                count += len(engine.feed(records.parse_line(entry.body)))
            elif entry.kind == "advance":
                count += len(engine.advance(entry.t))
            elif entry.kind == "meta" and entry.body:
                headers.update(json.loads(entry.body))
        except Exception:
            log.debug("replaying %s: entry failed", board, exc_info=True)
    return engine, count, headers
