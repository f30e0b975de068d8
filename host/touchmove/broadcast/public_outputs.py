"""What the public sees: the round PGN after the delay, each game's PGN, the rounds before, the caches that
keep serving them cheap, the documents' ETags, and the writer that keeps ``round-<n>.pgn`` current.

It reads the round through :class:`RoundSource` (:class:`~.round_storage.RoundStorage` is one) and writes
only the public PGN file.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from touchmove.broadcast.board_view import BoardView
from touchmove.broadcast.event_archive import EventArchive
from touchmove.broadcast.live_pgn import EMPTY_GAME, GameSnapshot, RoundPgn, write_atomically
from touchmove.broadcast.round_state import DelayLine
from touchmove.broadcast.tournament import Round, Tournament
from touchmove.clocks import Clock

log = logging.getLogger(__name__)

Games = dict[int, tuple[GameSnapshot, ...]]


class RoundSource(Protocol):
    """The round as the outputs read it."""

    @property
    def tournament(self) -> Tournament: ...
    @property
    def output_dir(self) -> Path: ...
    @property
    def round(self) -> Round: ...
    @property
    def by_number(self) -> dict[int, BoardView]: ...
    @property
    def delay_line(self) -> DelayLine: ...
    @property
    def version(self) -> int: ...
    @property
    def dirty(self) -> asyncio.Event: ...
    @property
    def archive(self) -> EventArchive: ...
    @property
    def clock(self) -> Clock: ...

    def live_games(self) -> Games: ...
    def public_past_games(self, number: int) -> Games: ...
    def round_date(self, number: int | None = None) -> dt.date: ...
    def rounds_so_far(self) -> list[int]: ...
    def save_if_due(self) -> None: ...
    def held_back_rounds(self, since: float) -> list[int]: ...
    def held_back_due(self, since: float) -> float | None: ...


class PublicOutputs:
    """The public documents of every round, from one :class:`RoundSource`."""

    def __init__(self, source: RoundSource, write_interval: float = 0.1) -> None:
        self.source = source
        self.write_interval = write_interval
        self.written_version = -1
        #: Public documents: (ETag, when that content was first served), for Last-Modified.
        self.modified: dict[str, tuple[str, float]] = {}
        self._pgn_listeners: list[Callable[[str], None]] = []
        self._pgn: RoundPgn | None = None
        self._pgn_cache: tuple[int, str] | None = None
        self._public_cache: tuple[Any, str] | None = None

    def round_opened(self) -> None:
        """The source's current round changed: its PGN renderer and the caches start again."""
        number = self.source.round.number
        self._pgn = RoundPgn(self.source.tournament, number, self.source.round_date(number))
        self._pgn_cache = self._public_cache = None

    def _renderer(self, number: int) -> RoundPgn:
        if number == self.source.round.number:
            if self._pgn is None:
                self.round_opened()
            assert self._pgn is not None
            return self._pgn
        return RoundPgn(self.source.tournament, number, self.source.round_date(number))

    @property
    def delay(self) -> float:
        """The current round's broadcast delay in seconds."""
        return self.source.delay_line.delay

    @property
    def pgn_path(self) -> Path:
        return self.source.output_dir / f"round-{self.source.round.number}.pgn"

    def round_pgn(self) -> str:
        """The current round's PGN as it stands (the arbiter's live view, no delay)."""
        version = self.source.version
        if self._pgn_cache is None or self._pgn_cache[0] != version:
            self._pgn_cache = (version, self._renderer(self.source.round.number).render(self.source.live_games()))
        return self._pgn_cache[1]

    def public_games(self, number: int | None = None) -> Games:
        """Each board's games of a round as the public sees them (the current round after the delay)."""
        source = self.source
        if number is None or number == source.round.number:
            if self.delay <= 0:
                return dict(source.live_games())
            now = source.clock.monotonic()
            return {n: source.delay_line.public(n, now) for n in source.by_number}
        return source.public_past_games(number)

    def public_pgn(self, number: int | None = None, boards: range | None = None) -> str:
        """A round's PGN as the public sees it (``boards``: only those board numbers)."""
        number = self.source.round.number if number is None else number
        current = number == self.source.round.number
        if current and self.delay <= 0 and boards is None:
            return self.round_pgn()
        games = self.public_games(number)
        # the cache holds the games themselves (compared by identity: an id could be reused once freed)
        key = (number, boards, tuple(games.items()))
        hit = self._public_cache
        if hit is not None and hit[0][:2] == key[:2] and len(hit[0][2]) == len(key[2]) and all(
                a[0] == b[0] and a[1] is b[1] for a, b in zip(hit[0][2], key[2], strict=True)):
            return hit[1]
        text = self._renderer(number).render(games, boards)
        self._public_cache = (key, text)
        return text

    def public_game_pgn(self, number: int, board: int, entry: int = 1) -> str | None:
        """One game of a round as the public sees it (``entry``: the board's game, from 1), or None."""
        rnd = self.source.tournament.rounds.get(number)
        if rnd is None:
            return None
        try:
            pairing = rnd.pairing(board)
        except KeyError:
            return None
        games = self.public_games(number).get(board) or ()
        if entry == 1 and not games:
            games = (EMPTY_GAME,)
        if not 1 <= entry <= len(games):
            return None
        return self._renderer(number).game_text(pairing, games[entry - 1], entry) + "\n"

    def all_rounds_pgn(self) -> str:
        """Every round of the file up to the current one, as the public sees them."""
        return "\n".join(self.public_pgn(n) for n in self.source.rounds_so_far())

    @property
    def console_private(self) -> bool:
        """Whether viewing the live console (and its API) needs an arbiter token: the file's
        ``private_console``, else while the round is delayed (the console is live: it would tell all)."""
        setting = self.source.tournament.settings.private_console
        return self.delay > 0 if setting is None else setting

    def on_pgn(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(pgn_text)`` after each write of the public round PGN."""
        self._pgn_listeners.append(callback)

    def write_now(self) -> Path:
        """Write the public round PGN (after the delay); return its path."""
        version = self.source.version
        text = self.public_pgn()
        path = self.pgn_path
        write_atomically(path, text)
        self.written_version = version
        for cb in self._pgn_listeners:
            cb(text)
        return path

    def write_rounds(self, numbers: list[int]) -> None:
        """Write the public PGN of rounds other than the current one (``round-<n>.pgn``)."""
        for number in numbers:
            write_atomically(self.source.output_dir / f"round-{number}.pgn", self.public_pgn(number))

    async def run_writer(self) -> None:
        """Keep ``round-N.pgn`` current: written at most ``write_interval`` after each change (and when a
        delayed change falls due, also of an earlier round left before its delay had passed); the round state
        saved with results and new games at once."""
        source = self.source
        written_at = source.clock.monotonic()
        while True:
            # what fell due since the last write (also during the sleep below) is due now: never skipped
            due = source.delay_line.next_due(written_at) if self.delay > 0 else None
            held = source.held_back_rounds(written_at)  # earlier rounds whose delay held something back
            past_due = source.held_back_due(written_at) if held else None
            if past_due is not None and (due is None or past_due < due):
                due = past_due
            timeout = None if due is None else max(0.0, due - source.clock.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(source.dirty.wait(), timeout)
            source.dirty.clear()
            source.archive.flush()
            try:
                source.save_if_due()
            except OSError:
                log.exception("saving the state of round %s failed", source.round.number)
            if self.written_version != source.version or due is not None:
                try:
                    written_at = source.clock.monotonic()
                    self.write_now()
                    if past_due is not None and past_due <= written_at:
                        self.write_rounds(held)
                except OSError:
                    log.exception("writing %s failed", self.pgn_path)
            await asyncio.sleep(self.write_interval)
