"""The delay lines of a broadcast's rounds: the current round's, kept on disk as it changes
(:mod:`.delay_journal`), and those of rounds left before their delay had passed (switched away from right
after their last games), whose last changes still wait for their time.

:class:`RoundDelays` reads and writes only the rounds' journals (``round-<n>-delay.jsonl``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from touchmove.broadcast.delay_journal import DelayJournal, delay_path
from touchmove.broadcast.live_pgn import GameSnapshot
from touchmove.broadcast.round_state import DelayLine
from touchmove.clocks import Clock

log = logging.getLogger(__name__)

Games = dict[int, tuple[GameSnapshot, ...]]


class RoundDelays:
    """The current round's delay line (:attr:`line`) and the lines of rounds held back; ``delay_seconds(n)`` is
    round ``n``'s delay."""

    def __init__(self, delay_seconds: Callable[[int], float], output_dir: Path, clock: Clock, number: int) -> None:
        self.delay_seconds = delay_seconds
        self.output_dir = output_dir
        self.clock = clock
        self.number = number
        #: The current round's line (kept in memory only until :meth:`open`).
        self.line = DelayLine(delay_seconds(number))
        self._held_back: dict[int, DelayLine] = {}
        self._journals_read: set[int] = set()

    def open(self, number: int, games: Mapping[int, tuple[GameSnapshot, ...]],
             seen: Callable[[int], tuple[GameSnapshot, ...] | None]) -> DelayLine:
        """Make round ``number`` current with its boards' ``games`` as they stand: its line from its journal (what
        was public before a restart, and what was still to come at its time), else from ``seen(board)`` (what was
        public, as an earlier version kept it in the round's state); then kept on disk. Return the line."""
        self.close()
        self._held_back.pop(number, None)
        self.number = number
        self.line = line = DelayLine(self.delay_seconds(number))
        path = delay_path(self.output_dir, number)
        if line.delay <= 0:
            # not kept up while there is no delay: a delay set again later must not start from it
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
            return line
        journal = DelayJournal(path, self.clock)
        now = self.clock.monotonic()
        for board, entries in journal.load(line.delay).items():
            if board in games and entries:
                line.restore(board, entries)
        for board, snapshots in games.items():
            if line.has(board):
                # the journal is never behind the saved games (it is written at each change, they every 30 s):
                # their moves since the save come back from the bridge's retained PGN
                continue
            public = seen(board)
            if public is not None:  # an earlier version kept what was public in the state: it stays public
                line.record(board, now - line.delay, public)
            line.record(board, now, snapshots)
        try:
            journal.rewrite(line.needed(now))
        except OSError:
            log.exception("%s cannot be written: the delayed view is kept in memory only", path)
            return line
        line.journal = journal
        return line

    def leave(self) -> None:
        """The current round is being left: what its delay still holds back stays held back until its time."""
        line = self.line
        if line.delay > 0 and line.next_due(self.clock.monotonic()) is not None:
            self._held_back[self.number] = line

    def close(self) -> None:
        """Close the current round's journal (a later change is kept in memory only)."""
        if self.line.journal is not None:
            self.line.journal.close()

    def compact(self) -> None:
        """Rewrite the current round's journal with only what the delay still needs, when it has grown."""
        journal = self.line.journal
        if journal is not None and journal.needs_compaction:
            try:
                journal.rewrite(self.line.needed(self.clock.monotonic()))
            except OSError:
                log.exception("%s cannot be rewritten", journal.path)

    def held_back(self, number: int) -> DelayLine | None:
        """The delay line of a round other than the current one while some of its changes are not public yet;
        read from its journal after a restart; None once everything is public."""
        if number not in self._held_back and number not in self._journals_read and number != self.number:
            self._journals_read.add(number)
            delay, path = self.delay_seconds(number), delay_path(self.output_dir, number)
            if delay > 0 and path.exists():
                read, journal = DelayLine(delay), DelayJournal(path, self.clock)
                for board, entries in journal.load(delay).items():
                    read.restore(board, entries)
                now = self.clock.monotonic()
                if read.next_due(now) is not None:
                    self._held_back[number] = read
                else:  # all public: kept as one change a board (read fast at the next start)
                    with contextlib.suppress(OSError):
                        journal.rewrite(read.needed(now))
                        journal.close()
        line = self._held_back.get(number)
        return line if line is not None and line.next_due(self.clock.monotonic()) is not None else None

    def held_back_rounds(self, since: float) -> list[int]:
        """The rounds held back whose public view changed or changes after ``since`` (the writer's last write);
        those with nothing after it are forgotten."""
        for number in [n for n, line in self._held_back.items() if line.next_due(since) is None]:
            del self._held_back[number]
        return sorted(self._held_back)

    def held_back_due(self, since: float) -> float | None:
        """When the public view of a round held back changes next after ``since`` (None: none will)."""
        dues = [due for line in self._held_back.values() if (due := line.next_due(since)) is not None]
        return min(dues, default=None)

    def public_past(self, number: int) -> Games | None:
        """A round held back as the public sees it now (each board as it stood ``delay`` ago); None when the
        round is not held back (its saved state is what the public sees)."""
        line = self.held_back(number)
        if line is None:
            return None
        now = self.clock.monotonic()
        return {board: line.public(board, now) for board in line.boards()}
