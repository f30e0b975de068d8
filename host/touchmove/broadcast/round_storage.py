"""The round being broadcast, in memory and on disk: its boards, what changed, the alert feed, the delay lines
(:mod:`.round_delays`), and the files that keep them (``round-<n>-state.json``, the results export,
``current-round.json``).

The constructor only remembers where things go: :meth:`RoundStorage.open` reads the saved state (the
:class:`~touchmove.broadcast.broadcaster.Broadcaster` calls it when it opens, in the service's async context).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any, Protocol

from touchmove.broadcast.board_view import AlertEntry, BoardView
from touchmove.broadcast.console import ConsoleState
from touchmove.broadcast.event_archive import EventArchive
from touchmove.broadcast.live_pgn import EMPTY_GAME, GameSnapshot, write_atomically
from touchmove.broadcast.results import FORFEIT, normalize_result
from touchmove.broadcast.results_export import results_csv, results_trf
from touchmove.broadcast.round_delays import RoundDelays
from touchmove.broadcast.round_state import BoardGames, DelayLine, Opening, RoundRecord, load_round, save_round
from touchmove.broadcast.tournament import Round, Tournament
from touchmove.clocks import Clock

log = logging.getLogger(__name__)

ALERT_FEED_LIMIT = 1000
#: The whole round state is saved at least this often while it changes (results and new games at once).
SAVE_INTERVAL = 30.0

#: Each board id's highest game number so far and its session: a new round's games number on from there.
Floors = dict[str, tuple[int, str | None]]


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Notifier(Protocol):
    """Where the consoles' streams are told of changes (:class:`~.console_streams.ConsoleStreams`)."""

    def notify(self, kind: str, data: dict[str, Any]) -> None: ...

    def board_changed(self, number: int, position_changed: bool) -> None: ...


class RoundStorage:
    """The current round's boards and alert feed, its delay line, and the saved state of every round."""

    def __init__(self, tournament: Tournament, output_dir: Path, clock: Clock,
                 notifier: Notifier) -> None:
        self.tournament = tournament
        self.output_dir = output_dir
        #: The clocks (tests give a :class:`~touchmove.clocks.ManualClock`): the delay runs on the
        #: monotonic one, dates follow the wall one.
        self.clock = clock
        self.notifier = notifier
        #: The file's ``round``: a switch is kept across restarts while the file still says this.
        self.file_round = tournament.round
        self.round: Round = tournament.current_round()
        self.round_started = dt.datetime.fromtimestamp(clock.wall(), dt.UTC).date()
        self.console = ConsoleState(tournament.time_control)
        #: The console's events on disk (the round's own file, opened by its first write).
        self.archive = EventArchive(output_dir / f"round-{tournament.round}-console.jsonl")
        self.boards: dict[str, BoardView] = {}
        self.by_number: dict[int, BoardView] = {}
        #: The delay lines: the current round's (kept on disk) and those of rounds held back.
        self.delays = RoundDelays(lambda n: self.tournament.delay_seconds(n), output_dir, clock, tournament.round)
        self.alerts: list[AlertEntry] = []
        self._next_alert = 1
        self.version = 0
        #: Set at each change: the writer wakes up.
        self.dirty = asyncio.Event()
        self._save_due = False
        self._saved_at = 0.0
        self._saved_version = -1
        self._past: dict[int, tuple[float, RoundRecord | None]] = {}
        self._snaps: dict[int, tuple[GameSnapshot, ...]] = {}
        self._snaps_dirty: set[int] = set()
        self._durable: dict[int, tuple[Any, ...]] = {}
        #: The first round opened takes the games the bridges show as its own (a broadcaster first started
        #: after its round began: ``touchmove broadcast --take-retained``); else every round starts clean.
        self.take_retained = False

    # -- opening a round ---------------------------------------------------------------------------
    @property
    def round_file(self) -> Path:
        return self.output_dir / "current-round.json"

    def saved_round(self) -> int:
        """The round an arbiter (or the schedule) switched to, while the file's ``round`` is unchanged."""
        t = self.tournament
        try:
            saved = json.loads(self.round_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return t.round
        if (isinstance(saved, dict) and saved.get("file_round") == t.round
                and saved.get("round") in t.rounds):
            return int(saved["round"])
        return t.round

    def open(self, number: int, floors: Floors) -> None:
        """Make ``number`` the current round: its boards, from its saved state if there is one (the console's
        events are the caller's to restore from :attr:`archive`; then :meth:`changed` with no board)."""
        self.tournament = dataclasses.replace(self.tournament, round=number)
        self.round = self.tournament.current_round()
        self.console = ConsoleState(self.tournament.time_control)  # timelines and windows are per round
        self.archive.close()
        self.archive = EventArchive(self.output_dir / f"round-{number}-console.jsonl")
        record = load_round(self.output_dir, number, self.tournament.event)
        today = dt.datetime.fromtimestamp(self.clock.wall(), dt.UTC).date()
        self.round_started = record.started if record is not None else today
        self.boards = {}
        for p in self.round.pairings:
            games = record.boards.get(p.board) if record is not None else None
            if games is None:
                floor, floor_session = floors.get(p.board_id, (None, None))
                games = BoardGames(floor=floor, floor_session=floor_session,
                                   opening=Opening(pending=not self.take_retained))
                if p.result:
                    games.current.set_result("arbiter", p.result, FORFEIT if p.forfeit else None)
            live = games.live()
            if live.ply and not live.needs_resync:
                # moves since the last save are in the bridge's retained PGN: take it when it comes
                live.needs_resync, live.resync_ply = True, live.ply
            self.boards[p.board_id] = BoardView(p, games)
        self.by_number = {b.pairing.board: b for b in self.boards.values()}
        if record is None:
            self._load_legacy_results()
        self.delays.open(number, {n: v.games.snapshots() for n, v in self.by_number.items()},
                         lambda n: record.public_snapshots(n) if record is not None else None)
        for other in self.tournament.rounds:
            self.delays.held_back(other)  # a round left before a restart with changes still to come
        self._snaps = {}
        self._snaps_dirty = set(self.by_number)
        self._durable = {n: v.games.durable_key() for n, v in self.by_number.items()}
        self._save_due = True

    def close_delay_journal(self) -> None:
        """Close the delay journal's file (the service stopping; a later change is kept in memory only)."""
        self.delays.close()

    def check_round(self, number: int) -> None:
        """Raise ValueError if round ``number``'s saved state cannot be taken (before switching to it)."""
        load_round(self.output_dir, number, self.tournament.event)

    def floors(self) -> Floors:
        """Each board's highest game number so far (and its session): the next round's games count on."""
        floors: Floors = {}
        for view in self.boards.values():
            games = [g for g in (*view.games.entries, view.games.held) if g is not None and g.number
                     and not g.retired]
            top = max(games, key=lambda g: g.number or 0, default=None)
            if top is not None and top.number and top.number >= (view.games.floor or 0):
                floors[view.pairing.board_id] = (top.number, top.session)
            elif view.games.floor:
                floors[view.pairing.board_id] = (view.games.floor, view.games.floor_session)
        return floors

    def switch(self, number: int) -> None:
        """Leave the current round (saved) for ``number``, and keep the choice across restarts. What the delay
        still held back of the round left stays held back until its time (:class:`~.round_delays.RoundDelays`)."""
        floors = self.floors()
        self.take_retained = False
        self._past.pop(self.round.number, None)
        self.delays.leave()
        self.open(number, floors)
        write_atomically(self.round_file, json.dumps({"round": number, "file_round": self.file_round}) + "\n")

    def _load_legacy_results(self) -> None:
        """Arbiter results saved by an earlier version (``round-<n>-results.json``)."""
        try:
            saved = json.loads(self.results_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(saved, dict):
            return
        for number, result in saved.items():
            view = self.by_number.get(int(number)) if str(number).isdigit() else None
            norm = normalize_result(str(result)) if result is not None else None
            if view is not None and norm is not None:
                view.game.set_result("arbiter", norm)

    # -- rounds ------------------------------------------------------------------------------------
    @property
    def delay(self) -> float:
        """The current round's broadcast delay in seconds."""
        return self.delay_line.delay

    @property
    def results_path(self) -> Path:
        return self.output_dir / f"round-{self.round.number}-results.json"

    def round_date(self, number: int | None = None) -> dt.date:
        """The round's date: the file's, else the day the round started here (kept in its state)."""
        number = self.round.number if number is None else number
        rnd = self.tournament.rounds.get(number)
        if rnd is not None and rnd.date is not None:
            return rnd.date
        if number == self.round.number:
            return self.round_started
        record = self.past_round(number)
        return record.started if record is not None else self.round_started

    def past_round(self, number: int) -> RoundRecord | None:
        """A round other than the current one, from its saved state (re-read when the file changes)."""
        path = self.output_dir / f"round-{number}-state.json"
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return None
        hit = self._past.get(number)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        try:
            record = load_round(self.output_dir, number, self.tournament.event)
        except ValueError as exc:
            log.warning("%s", exc)
            record = None
        self._past[number] = (mtime, record)
        return record

    @property
    def delay_line(self) -> DelayLine:
        """The current round's delay line."""
        return self.delays.line

    def held_back_rounds(self, since: float) -> list[int]:
        """The earlier rounds whose delay held something back after ``since`` (:class:`.RoundDelays`)."""
        return self.delays.held_back_rounds(since)

    def held_back_due(self, since: float) -> float | None:
        return self.delays.held_back_due(since)

    def public_past_games(self, number: int) -> dict[int, tuple[GameSnapshot, ...]]:
        """Each board's games of a round other than the current one as the public sees them: while the delay
        holds some back, as they stood ``delay`` ago; then as saved (:meth:`past_games`)."""
        held = self.delays.public_past(number)
        return held if held is not None else self.past_games(number)

    def past_games(self, number: int) -> dict[int, tuple[GameSnapshot, ...]]:
        """Each board's games of a round other than the current one (the arbiter's): saved, else the file's
        results."""
        record = self.past_round(number)
        if record is None:  # a round not broadcast here: the results the file gives
            rnd = self.tournament.rounds.get(number)
            return {p.board: (dataclasses.replace(EMPTY_GAME, result=p.result, source="arbiter",
                                                  reason=FORFEIT if p.forfeit else None),)
                    for p in (rnd.pairings if rnd is not None else ()) if p.result}
        return {n: g.snapshots() for n, g in record.boards.items()}

    def scheduled_round(self) -> int | None:
        """The latest round whose scheduled start (the file's ``start``) has passed, when it is after the current
        one."""
        now = dt.datetime.fromtimestamp(self.clock.wall(), dt.UTC)
        due = [n for n, r in self.tournament.rounds.items() if r.start is not None and r.start <= now]
        latest = max(due, default=None)
        return latest if latest is not None and latest > self.round.number else None

    def rounds_so_far(self) -> list[int]:
        """The rounds up to the current one, and any later one with a saved state."""
        return [n for n in sorted(self.tournament.rounds)
                if n <= self.round.number or self.past_round(n) is not None]

    def live_games(self) -> dict[int, tuple[GameSnapshot, ...]]:
        """Each board's games of the current round as they stand (only the boards changed since the last
        call are looked at again)."""
        if self._snaps_dirty:
            dirty, self._snaps_dirty = self._snaps_dirty, set()
            for n in dirty:
                view = self.by_number.get(n)
                if view is not None:
                    self._snaps[n] = view.games.snapshots()
        return self._snaps

    # -- changes and the alert feed ----------------------------------------------------------------
    def notify(self, kind: str, data: dict[str, Any]) -> None:
        """Tell the consoles' streams (``alert``, ``ack``, ``bridge``, ``response``...)."""
        self.notifier.notify(kind, data)

    def changed(self, view: BoardView | None, *, game_changed: bool = True) -> None:
        """Note a change: the PGN writer and the dashboard streams pick it up (bursts are coalesced)."""
        if game_changed:
            self.version += 1
            self.dirty.set()
            if view is not None:
                games = view.games
                self._snaps_dirty.add(view.pairing.board)
                if self.delay_line.delay > 0:
                    self.delay_line.record(view.pairing.board, self.clock.monotonic(), games.snapshots())
                key = games.durable_key()
                if self._durable.get(view.pairing.board) != key:
                    self._durable[view.pairing.board] = key
                    self._save_due = True  # results, and what the bridge no longer shows: on disk at once
        if view is not None:
            self.notifier.board_changed(view.pairing.board, game_changed)

    def add_alert(self, view: BoardView, event: dict[str, Any], key: tuple[Any, ...] = ()) -> None:
        """Put an alert of ``view``'s board in the feed (the latest ALERT_FEED_LIMIT are kept)."""
        ply = event.get("ply")
        detail = event.get("detail")
        ts = event.get("ts")
        entry = AlertEntry(
            id=self._next_alert, board=view.pairing.board, board_id=view.pairing.board_id,
            code=str(event.get("code", "?")), article=str(event.get("article", "")),
            ply=ply if isinstance(ply, int) else None,
            ts=ts if isinstance(ts, str) else view.last_event_ts or now_iso(),
            detail=detail if isinstance(detail, dict) else {}, key=key,
        )
        self._next_alert += 1
        self.console.on_alert(entry, event)
        self.alerts.append(entry)
        del self.alerts[:-ALERT_FEED_LIMIT]
        self.notifier.notify("alert", entry.to_json())

    # -- saving ------------------------------------------------------------------------------------
    def record(self) -> RoundRecord:
        public: dict[int, list[tuple[int | None, int, str]]] = {}
        if self.delay > 0:
            now = self.clock.monotonic()
            for n in self.by_number:
                public[n] = [(g.number, g.ply, g.result) for g in self.delay_line.public(n, now)]
        return RoundRecord(self.round.number, self.round_started,
                           {n: v.games for n, v in self.by_number.items()}, public, self.tournament.event)

    def save_state(self) -> None:
        """Save every board's games of the round (``round-<n>-state.json``) and the results export
        (``round-<n>-results.csv``, ``results.trf`` and ``results-2026.trf``: the arbiter's, without the delay)."""
        save_round(self.output_dir, self.record())
        rounds = {n: (self.past_games(n) if n != self.round.number else dict(self.live_games()))
                  for n in self.rounds_so_far()}
        write_atomically(self.output_dir / f"round-{self.round.number}-results.csv",
                         results_csv(self.tournament, {self.round.number: rounds[self.round.number]}))
        write_atomically(self.output_dir / "results.trf", results_trf(self.tournament, rounds, self.round_date))
        write_atomically(self.output_dir / "results-2026.trf",
                         results_trf(self.tournament, rounds, self.round_date, variant="2026"))
        self.archive.flush()
        self.delays.compact()
        self._save_due = False
        self._saved_at = self.clock.monotonic()
        self._saved_version = self.version

    def save_if_due(self) -> None:
        """Save the round state if a result or a new game needs it, or it changed SAVE_INTERVAL ago."""
        if self._save_due or (self._saved_version != self.version
                              and self.clock.monotonic() - self._saved_at >= SAVE_INTERVAL):
            self.save_state()
