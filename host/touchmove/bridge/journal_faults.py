"""What the bridge does while its journal cannot write (disk full, I/O errors, a lock held by another program).

When a commit fails, publishing goes on from memory, the fault is reported on ``<base>/bridge/state`` and by
``health_check``, and the held writes are retried every :data:`JOURNAL_RETRY_S`. At most
:data:`MAX_HELD_WRITES` are held: beyond that the raw records are given up first (each board's engine is
checkpointed instead, so games, PGN and events stay complete; the ``export`` recording gets a gap), then events
already handed to MQTT, then the oldest unpublished events. docs/bridge-faults.md says what the operator does.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from touchmove.bridge.journal import Journal
from touchmove.bridge.session import BoardSession
from touchmove.mqtt.wire import iso_now

log = logging.getLogger("touchmove.bridge")

#: Journal writes held in memory at most while the journal cannot write (about 300 bytes each).
MAX_HELD_WRITES = 500_000
#: Seconds between two attempts to write held journal writes.
JOURNAL_RETRY_S = 1.0


class JournalFaults:
    """Commits the bridge's journal, and holds, retries and (past the bound) gives up writes while it fails.

    ``boards`` is the bridge's sessions (read and checkpointed when records are given up), ``checkpoint``
    journals a board's engine, ``changed`` republishes the bridge's state (its ``problems``), ``loop`` returns the
    event loop the retries run on.
    """

    def __init__(self, journal: Journal, boards: dict[str, BoardSession], *,
                 checkpoint: Callable[[BoardSession], None], changed: Callable[[], None],
                 loop: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self.journal = journal
        self.boards = boards
        self._checkpoint = checkpoint
        self._changed = changed
        self._loop = loop
        self.retry: asyncio.TimerHandle | None = None
        self.loss: dict[str, int] = {"records_not_journaled": 0, "events_not_journaled": 0, "events_lost": 0}

    def commit(self) -> None:
        """Write what is held unless a retry is pending; on a failure, hold it and retry later."""
        if self.retry is None and not self.journal.commit():
            self._failed()
        if self.journal.held > MAX_HELD_WRITES:
            self._limit_held()

    def stop(self) -> None:
        """Cancel the pending retry (shutdown)."""
        if self.retry is not None:
            self.retry.cancel()
            self.retry = None

    def _failed(self) -> None:
        """The journal cannot write: say so, go on publishing from memory, and try again later."""
        self.retry = self._loop().call_later(JOURNAL_RETRY_S, self._retry)
        self._changed()

    def _retry(self) -> None:
        self.retry = None
        loop = self._loop()
        if self.journal.commit(max_chunks=16):
            log.info("journal: every held write is written")
            self._changed()
        elif self.journal.fault is None:           # writing again, more to write: go on after other work
            self.retry = loop.call_later(0, self._retry)
            self._changed()
        else:
            self.retry = loop.call_later(JOURNAL_RETRY_S, self._retry)
            self._changed()

    def _limit_held(self) -> None:
        """Too many writes wait for the journal: give some up, the least needed first (see the module doc)."""
        journal = self.journal
        superseded = {"entry", "checkpoint"}
        dropped = journal.drop_held(lambda w: w.kind in superseded or (w.kind == "board" and
                                                                      w.sql.startswith("UPDATE")))
        records_lost: dict[str, int] = {}
        earlier: dict[str, int] = {}         # the gap notes of earlier passes, merged into this one
        for write in dropped:
            if write.kind == "entry" and write.params[1] == "gap":
                count = json.loads(write.params[3])["records_not_journaled"]
                earlier[write.board] = earlier.get(write.board, 0) + count
            elif write.kind == "entry":
                records_lost[write.board] = records_lost.get(write.board, 0) + 1
        recheckpoint = {w.board for w in dropped if w.kind in superseded}
        if records_lost:
            self.loss["records_not_journaled"] += sum(records_lost.values())
            log.error("journal: %d writes held, over the bound of %d: %d record(s) of %d board(s) given up "
                      "(engines checkpointed instead; the export recording has a gap)", journal.held + len(dropped),
                      MAX_HELD_WRITES, sum(records_lost.values()), len(records_lost))
        for sess in self.boards.values():     # the board rows and checkpoints given up, as they are now
            journal.update_board(sess.board, boot=sess.boot, last_seq=sess.last_seq, t_offset=sess.t_offset,
                                 last_t=sess.last_t)
            journal.mark_published(sess.board, sess.published)
            gap = records_lost.get(sess.board, 0) + earlier.get(sess.board, 0)
            if gap:
                journal.add_entry(sess.board, "gap", sess.last_t, json.dumps({"records_not_journaled": gap}),
                                  "bridge", iso_now())
            if sess.board in recheckpoint:
                self._checkpoint(sess)
        if journal.held <= MAX_HELD_WRITES:
            return
        # Events the broker has (or the MQTT queue holds) are the next to go, then the oldest others.
        queued = {sess.board: sess.queued_seq for sess in self.boards.values()}
        gone = journal.drop_held(lambda w: w.kind == "event" and w.seq <= queued.get(w.board, 0))
        self.loss["events_not_journaled"] += len(gone)
        excess = journal.held - MAX_HELD_WRITES // 2
        if excess > 0:
            chosen: set[tuple[str, int]] = set()
            for write in journal.held_writes():    # oldest first
                if write.kind == "event":
                    chosen.add((write.board, write.seq))
                    if len(chosen) >= excess:
                        break
            lost = journal.drop_held(lambda w: w.kind == "event" and (w.board, w.seq) in chosen)
            for write in lost:
                lost_sess = self.boards.get(write.board)
                if lost_sess is not None and write.seq > lost_sess.queued_seq:
                    lost_sess.queued_seq = write.seq      # never published: the board's stream has a gap there
            self.loss["events_lost"] += len(lost)
            log.error("journal: %d event(s) neither journaled nor published dropped (bound %d)", len(lost),
                      MAX_HELD_WRITES)
        self._changed()

    def status(self) -> dict[str, Any]:
        """Return the journal's health: whether it writes, why not, and what is held or was given up."""
        fault = self.journal.fault
        out: dict[str, Any] = {"ok": fault is None, "held_writes": self.journal.held,
                               "poisoned_writes": self.journal.poisoned, **self.loss}
        if fault is not None:
            out.update(error=fault.reason, since=fault.since, failures=fault.failures)
        return out

    def problems(self) -> list[dict[str, Any]]:
        """Return the journal's problems for ``bridge/state`` (empty when it writes and nothing was given up)."""
        out: list[dict[str, Any]] = []
        fault = self.journal.fault
        if fault is not None:
            out.append({"code": "journal_write_failed", "reason": fault.reason, "since": fault.since,
                        "held_writes": self.journal.held})
        if any(self.loss.values()):
            out.append({"code": "journal_incomplete", **self.loss})
        return out
