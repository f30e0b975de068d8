"""The broadcaster's state: every board of the round, the alert feed, the round PGN, the arbiter's actions.

Pure asyncio, no network of its own: the MQTT consumer feeds it :class:`BridgeMessage` objects, the web
server reads it and calls its actions, which go out through the ``publish`` function it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import io
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import chess
import chess.pgn

from touchmove.broadcast import bridge_topics
from touchmove.broadcast.board_view import AlertEntry, BoardView, alert_meanings
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.console import ConsoleState
from touchmove.broadcast.console_streams import ConsoleStreams
from touchmove.broadcast.event_archive import EventArchive
from touchmove.broadcast.live_pgn import EMPTY_GAME, GameSnapshot, RoundPgn, write_atomically
from touchmove.broadcast.results import kings_result, normalize_result
from touchmove.broadcast.results_export import results_csv, results_trf
from touchmove.broadcast.round_state import (
    Allow,
    BoardGames,
    DelayLine,
    RoundRecord,
    load_round,
    save_round,
)
from touchmove.broadcast.tournament import Tournament

log = logging.getLogger(__name__)

#: ``publish(broker_index, topic, payload)``: sends one MQTT message (QoS 1, not retained).
Publish = Callable[[int, str, bytes], Awaitable[None]]

PROMOTION_PIECES = ("q", "r", "b", "n")
ALERT_FEED_LIMIT = 1000
#: Unknown board ids remembered (beyond this the oldest are forgotten) and logged one by one (then in sums).
UNKNOWN_BOARDS_KEPT = 1024
UNKNOWN_BOARDS_LOGGED = 50
UNKNOWN_BOARDS_SUM_EVERY = 500
#: Rejected events logged per board (then every REJECTS_LOG_EVERY-th).
REJECTS_LOGGED = 5
REJECTS_LOG_EVERY = 100
#: The whole round state is saved at least this often while it changes (results and new games at once).
SAVE_INTERVAL = 30.0
#: An arbiter's command the board's engine did not apply (the bridge publishes why): an alert for the console.
REJECTIONS = ("result_rejected", "resync_rejected")
class ActionError(Exception):
    """An arbiter action that cannot be done (unknown board, bad value, no bridge connection)."""


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Broadcaster:
    """All the boards of the round being broadcast (and the rounds before it, from their saved state)."""

    def __init__(self, tournament: Tournament, *, output_dir: Path | None = None,
                 publish: Publish | None = None, write_interval: float = 0.1,
                 clock: Callable[[], float] = time.time) -> None:
        self.tournament = tournament
        self.output_dir = output_dir if output_dir is not None else tournament.settings.output_dir
        self.publish = publish
        self.write_interval = write_interval
        #: Wall-clock seconds (injected by tests: the delay and the dates follow it).
        self.clock = clock
        self.alerts: list[AlertEntry] = []
        self._next_alert = 1
        self.bridges: dict[str, str] = {}
        #: The consoles' event streams.
        self.streams = ConsoleStreams(lambda: self.by_number)
        self.console = ConsoleState(tournament.time_control)
        self.version = 0
        self.written_version = -1
        self._dirty = asyncio.Event()
        self._pgn_listeners: list[Callable[[str], None]] = []
        self._round_listeners: list[Callable[[int], None]] = []
        self._unknown: OrderedDict[str, None] = OrderedDict()
        self.unknown_boards = 0
        self._transactions = 0
        self.meanings = alert_meanings()
        self._save_due = False
        self._saved_at = 0.0
        self._saved_version = -1
        self._pgn_cache: tuple[int, str] | None = None
        self._public_cache: tuple[Any, str] | None = None
        self._past: dict[int, tuple[float, RoundRecord | None]] = {}
        #: Public documents: (ETag, when that content was first served), for Last-Modified.
        self.modified: dict[str, tuple[str, float]] = {}
        #: The lichess push's status and token setter (set by the service when a push is configured).
        self.push_status: Callable[[], dict[str, Any]] | None = None
        self.set_lichess_token: Callable[[str], None] | None = None
        #: The file's ``round``: a switch is kept across restarts while the file still says this.
        self.file_round = tournament.round
        #: The console's events on disk (the round's own file: see :meth:`_open_round`).
        self.archive = EventArchive(self.output_dir / f"round-{tournament.round}-console.jsonl")
        self._open_round(self._saved_round(), {})

    # -- rounds ------------------------------------------------------------------------------------
    @property
    def round_file(self) -> Path:
        return self.output_dir / "current-round.json"

    def _saved_round(self) -> int:
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

    def _open_round(self, number: int, floors: dict[str, tuple[int, str | None]]) -> None:
        """Make ``number`` the current round: its boards, from its saved state if there is one."""
        self.tournament = dataclasses.replace(self.tournament, round=number)
        self.round = self.tournament.current_round()
        self.console = ConsoleState(self.tournament.time_control)  # timelines and windows are per round
        self.archive.close()
        self.archive = EventArchive(self.output_dir / f"round-{number}-console.jsonl")
        record = load_round(self.output_dir, number, self.tournament.event)
        today = dt.datetime.fromtimestamp(self.clock(), dt.UTC).date()
        self.round_started = record.started if record is not None else today
        self.boards: dict[str, BoardView] = {}
        for p in self.round.pairings:
            games = record.boards.get(p.board) if record is not None else None
            if games is None:
                floor, floor_session = floors.get(p.board_id, (None, None))
                games = BoardGames(floor=floor, floor_session=floor_session)
                if p.result:
                    games.current.set_result("arbiter", p.result)
            live = games.live()
            if live.ply and not live.needs_resync:
                # moves since the last save are in the bridge's retained PGN: take it when it comes
                live.needs_resync, live.resync_ply = True, live.ply
            self.boards[p.board_id] = BoardView(p, games)
        self.by_number: dict[int, BoardView] = {b.pairing.board: b for b in self.boards.values()}
        if record is None:
            self._load_legacy_results()
        self._pgn = RoundPgn(self.tournament, number, self.round_date(number))
        self.delay_line = DelayLine(self.tournament.delay_seconds(number))
        now = self.clock()
        for n, view in self.by_number.items():
            seen = record.public_snapshots(n) if record is not None and self.delay > 0 else None
            if seen is not None:  # what was public before the restart stays public; the rest waits
                self.delay_line.record(n, 0.0, seen)
            self.delay_line.record(n, now, view.games.snapshots())
        self._pgn_cache = self._public_cache = None
        self._snaps: dict[int, tuple[GameSnapshot, ...]] = {}
        self._snaps_dirty: set[int] = set(self.by_number)
        self._durable: dict[int, tuple[Any, ...]] = {n: v.games.durable_key() for n, v in self.by_number.items()}
        self._save_due = True
        self._restore_console()
        self._changed(None)

    def _restore_console(self) -> None:
        """The round's events and acknowledgements kept by an earlier run (or before a round switch): the
        timelines, alerts and claim windows as they were; events the bridges send again are no news."""
        count = 0
        for board, line in self.archive.read():
            view = self.by_number.get(board)
            if view is None:
                continue
            event = line.get("event")
            if isinstance(event, dict):
                count += 1
                seq = event.get("seq")
                if isinstance(seq, int) and isinstance(event.get("session"), str):
                    view.sessions_seq[event["session"]] = max(seq, view.sessions_seq.get(event["session"], seq))
                self._console_event(view, event, restoring=True)
                continue
            key = tuple(line["ack"])
            for entry in self.alerts:
                if entry.board == board and entry.key == key and not entry.acked:
                    at, by = line.get("at"), line.get("by")
                    entry.acked, entry.acked_at = True, at if isinstance(at, str) else None
                    entry.acked_by = by if isinstance(by, str) else None
        if count:
            log.info("round %s: %s console events restored from %s", self.round.number, count, self.archive.path)

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

    def switch_round(self, number: int) -> dict[str, Any]:
        """Broadcast round ``number`` from now on (the arbiter's action, or the schedule). The round
        before is saved and stays served; games the bridges numbered so far belong to it."""
        if number not in self.tournament.rounds:
            raise ActionError(f"round {number} has no pairings in the tournament file")
        if number == self.round.number:
            return {"round": number, "changed": False}
        try:
            load_round(self.output_dir, number, self.tournament.event)
        except ValueError as exc:
            raise ActionError(str(exc)) from None
        self.save_state()
        with contextlib.suppress(OSError):
            self.write_now()
        floors: dict[str, tuple[int, str | None]] = {}
        for view in self.boards.values():
            games = [g for g in (*view.games.entries, view.games.held) if g is not None and g.number
                     and not g.retired]
            top = max(games, key=lambda g: g.number or 0, default=None)
            if top is not None and top.number and top.number >= (view.games.floor or 0):
                floors[view.pairing.board_id] = (top.number, top.session)
            elif view.games.floor:
                floors[view.pairing.board_id] = (view.games.floor, view.games.floor_session)
        old = self.round.number
        self._past.pop(old, None)
        self._open_round(number, floors)
        write_atomically(self.round_file, json.dumps({"round": number, "file_round": self.file_round}) + "\n")
        log.info("round %s -> round %s", old, number)
        self.save_state()
        self.notify("round", {"round": number, "previous": old})
        for cb in self._round_listeners:
            cb(number)
        self.notify("snapshot", self.snapshot(svg=False))
        return {"round": number, "previous": old, "changed": True}

    def scheduled_round(self) -> int | None:
        """The latest round whose scheduled start has passed, when it is after the current one."""
        now = dt.datetime.fromtimestamp(self.clock(), dt.UTC)
        due = [n for n, r in self.tournament.rounds.items() if r.start is not None and r.start <= now]
        latest = max(due, default=None)
        return latest if latest is not None and latest > self.round.number else None

    async def run_schedule(self, period: float = 1.0) -> None:
        """Switch to a round when its ``start`` (in the file) has come."""
        while True:
            number = self.scheduled_round()
            if number is not None:
                try:
                    self.switch_round(number)
                except (ActionError, OSError, ValueError) as exc:
                    log.error("switching to round %s failed: %s", number, exc)
            await asyncio.sleep(period)

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

    # -- files -------------------------------------------------------------------------------------
    @property
    def pgn_path(self) -> Path:
        return self.output_dir / f"round-{self.round.number}.pgn"

    @property
    def results_path(self) -> Path:
        return self.output_dir / f"round-{self.round.number}-results.json"

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

    def record(self) -> RoundRecord:
        public: dict[int, list[tuple[int | None, int, str]]] = {}
        if self.delay > 0:
            now = self.clock()
            for n in self.by_number:
                public[n] = [(g.number, g.ply, g.result) for g in self.delay_line.public(n, now)]
        return RoundRecord(self.round.number, self.round_started,
                           {n: v.games for n, v in self.by_number.items()}, public, self.tournament.event)

    def save_state(self) -> None:
        """Save every board's games of the round (``round-<n>-state.json``) and the results export
        (``round-<n>-results.csv``, ``results.trf`` and ``results-2026.trf``: the arbiter's, without the delay)."""
        save_round(self.output_dir, self.record())
        rounds = {n: (self.public_games(n) if n != self.round.number
                      else dict(self.live_games()))
                  for n in self.rounds_so_far()}
        write_atomically(self.output_dir / f"round-{self.round.number}-results.csv",
                         results_csv(self.tournament, {self.round.number: rounds[self.round.number]}))
        write_atomically(self.output_dir / "results.trf", results_trf(self.tournament, rounds, self.round_date))
        write_atomically(self.output_dir / "results-2026.trf",
                         results_trf(self.tournament, rounds, self.round_date, variant="2026"))
        self.archive.flush()
        self._save_due = False
        self._saved_at = time.monotonic()
        self._saved_version = self.version

    def save_if_due(self) -> None:
        """Save the round state if a result or a new game needs it (the writer calls this)."""
        self._maybe_save()

    def _maybe_save(self) -> None:
        if self._save_due or (self._saved_version != self.version
                              and time.monotonic() - self._saved_at >= SAVE_INTERVAL):
            self.save_state()

    # -- the round PGN -----------------------------------------------------------------------------
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

    def round_pgn(self) -> str:
        """The current round's PGN as it stands (the arbiter's live view, no delay)."""
        if self._pgn_cache is None or self._pgn_cache[0] != self.version:
            self._pgn_cache = (self.version, self._pgn.render(self.live_games()))
        return self._pgn_cache[1]

    @property
    def delay(self) -> float:
        """The current round's broadcast delay in seconds."""
        return self.delay_line.delay

    def public_games(self, number: int | None = None) -> dict[int, tuple[GameSnapshot, ...]]:
        """Each board's games of a round as the public sees them (the current round after the delay)."""
        if number is None or number == self.round.number:
            if self.delay <= 0:
                return dict(self.live_games())
            now = self.clock()
            return {n: self.delay_line.public(n, now) for n in self.by_number}
        record = self.past_round(number)
        if record is None:  # a round not broadcast here: the results the file gives
            rnd = self.tournament.rounds.get(number)
            return {p.board: (dataclasses.replace(EMPTY_GAME, result=p.result, source="arbiter"),)
                    for p in (rnd.pairings if rnd is not None else ()) if p.result}
        return {n: g.snapshots() for n, g in record.boards.items()}

    def rounds_so_far(self) -> list[int]:
        """The rounds up to the current one, and any later one with a saved state."""
        return [n for n in sorted(self.tournament.rounds)
                if n <= self.round.number or self.past_round(n) is not None]

    def public_pgn(self, number: int | None = None, boards: range | None = None) -> str:
        """A round's PGN as the public sees it (``boards``: only those board numbers)."""
        number = self.round.number if number is None else number
        current = number == self.round.number
        if current and self.delay <= 0 and boards is None:
            return self.round_pgn()
        games = self.public_games(number)
        # the cache holds the games themselves (compared by identity: an id could be reused once freed)
        key = (number, boards, tuple(games.items()))
        hit = self._public_cache
        if hit is not None and hit[0][:2] == key[:2] and len(hit[0][2]) == len(key[2]) and all(
                a[0] == b[0] and a[1] is b[1] for a, b in zip(hit[0][2], key[2], strict=True)):
            return hit[1]
        renderer = self._pgn if current else RoundPgn(self.tournament, number, self.round_date(number))
        text = renderer.render(games, boards)
        self._public_cache = (key, text)
        return text

    def public_game_pgn(self, number: int, board: int, entry: int = 1) -> str | None:
        """One game of a round as the public sees it (``entry``: the board's game, from 1), or None."""
        rnd = self.tournament.rounds.get(number)
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
        renderer = self._pgn if number == self.round.number else RoundPgn(self.tournament, number,
                                                                           self.round_date(number))
        return renderer.game_text(pairing, games[entry - 1], entry) + "\n"

    @property
    def console_private(self) -> bool:
        """Whether viewing the live console (and its API) needs an arbiter token: the file's
        ``private_console``, else while the round is delayed (the console is live: it would tell all)."""
        setting = self.tournament.settings.private_console
        return self.delay > 0 if setting is None else setting

    def status(self, *, arbiter: bool = True) -> dict[str, Any]:
        """What ``/status.json`` shows: the round, the delay, the bridges, the lichess push. Without
        ``arbiter`` during a delay, only what the delayed outputs show (no held games, no live counts)."""
        boards = list(self.by_number.values())
        delayed = self.delay > 0 and not arbiter
        if delayed:
            public = self.public_games()
            finished = sum(1 for games in public.values() if games and games[-1].result != "*")
        else:
            finished = sum(1 for v in boards if v.game.has_result)
        out = {
            "event": self.tournament.event, "round": self.round.number,
            "rounds": sorted(self.tournament.rounds), "round_date": self.round_date().isoformat(),
            "delay_minutes": self.delay / 60.0, "console_private": self.console_private,
            "boards": len(boards), "finished": finished,
            "held_games": [v.pairing.board for v in boards if v.games.held is not None],
            "needs_resync": [v.pairing.board for v in boards if v.games.live().needs_resync],
            "online": sum(1 for v in boards if v.online), "bridges": dict(self.bridges),
            "unknown_boards": self.unknown_boards, "rejected_events": sum(v.rejected for v in boards),
            "push": self.push_status() if self.push_status is not None else None,
        }
        if delayed:  # what the boards do now is for the arbiters until the delay has passed
            for key in ("held_games", "needs_resync", "rejected_events"):
                out.pop(key)
        return out

    def all_rounds_pgn(self) -> str:
        """Every round of the file up to the current one, as the public sees them."""
        return "\n".join(self.public_pgn(n) for n in self.rounds_so_far())

    def on_round(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(round_number)`` after each switch of the round (the service re-assigns)."""
        self._round_listeners.append(callback)

    def on_pgn(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(pgn_text)`` after each write of the public round PGN."""
        self._pgn_listeners.append(callback)

    def write_now(self) -> Path:
        """Write the public round PGN (after the delay) and the results export; return the PGN's path."""
        version = self.version
        text = self.public_pgn()
        write_atomically(self.pgn_path, text)
        self.written_version = version
        for cb in self._pgn_listeners:
            cb(text)
        return self.pgn_path

    async def run_writer(self) -> None:
        """Keep ``round-N.pgn`` current: written at most ``write_interval`` after each change (and when a
        delayed change falls due); the round state saved with results and new games at once."""
        written_at = self.clock()
        while True:
            # what fell due since the last write (also during the sleep below) is due now: never skipped
            due = self.delay_line.next_due(written_at) if self.delay > 0 else None
            timeout = None if due is None else max(0.0, due - self.clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._dirty.wait(), timeout)
            self._dirty.clear()
            self.archive.flush()
            try:
                self._maybe_save()
            except OSError:
                log.exception("saving the state of round %s failed", self.round.number)
            if self.written_version != self.version or due is not None:
                try:
                    written_at = self.clock()
                    self.write_now()
                except OSError:
                    log.exception("writing %s failed", self.pgn_path)
            await asyncio.sleep(self.write_interval)

    # -- the consoles' event streams (:mod:`.console_streams`) -------------------------------------
    def listen(self, *, svg: bool = True) -> asyncio.Queue[tuple[str, dict[str, Any]]]:
        """A queue of updates for one stream; ``svg=False``: without pictures (the console draws its own)."""
        return self.streams.listen(svg=svg)

    def unlisten(self, queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
        self.streams.unlisten(queue)

    def notify(self, kind: str, data: dict[str, Any]) -> None:
        self.streams.notify(kind, data)

    def flush_notifications(self) -> None:
        """Send one ``board`` update per changed board now (the streams' notifier does it every 25 ms)."""
        self.streams.flush()

    def _changed(self, view: BoardView | None, *, game_changed: bool = True) -> None:
        """Note a change: the PGN writer and the dashboard streams pick it up (bursts are coalesced)."""
        if game_changed:
            self.version += 1
            self._dirty.set()
            if view is not None:
                games = view.games
                self._snaps_dirty.add(view.pairing.board)
                if self.delay_line.delay > 0:
                    self.delay_line.record(view.pairing.board, self.clock(), games.snapshots())
                key = games.durable_key()
                if self._durable.get(view.pairing.board) != key:
                    self._durable[view.pairing.board] = key
                    self._save_due = True  # results, and what the bridge no longer shows: on disk at once
        if view is not None:
            self.streams.board_changed(view.pairing.board, game_changed)

    def snapshot(self, *, svg: bool = True) -> dict[str, Any]:
        """Everything the dashboard shows; the pictures already rendered (the others follow as ``svg``)."""
        t = self.tournament
        if svg:
            self.streams.want_pictures(n for n, v in self.by_number.items() if v.cached_svg() is None)
        return {
            "event": t.event, "site": t.site, "round": self.round.number, "time_control": t.time_control,
            "rounds": sorted(t.rounds), "delay_minutes": self.delay / 60.0,
            "push": self.push_status() if self.push_status is not None else None,
            "boards": [self.by_number[n].to_json(svg=svg) for n in sorted(self.by_number)],
            "alerts": [a.to_json() for a in self.alerts],
            "bridges": dict(self.bridges),
            "meanings": self.meanings,
        }

    # -- messages from the bridges -----------------------------------------------------------------
    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        """Apply one decoded bridge message."""
        if msg.board_id is None:
            if msg.kind == "bridge_state" and isinstance(msg.payload, dict):
                state = str(msg.payload.get("state", "?"))
                self.bridges[msg.base] = state
                self.notify("bridge", {"base": msg.base, "state": state})
                if state == "offline":  # the bridge's last will: its boards' availability is stale
                    for stale in self.boards.values():
                        if stale.base == msg.base and stale.online:
                            stale.online = False
                            self._changed(stale, game_changed=False)
            return
        view = self.boards.get(msg.board_id)
        if view is None:
            self._unknown_board(msg)
            return
        view.broker, view.base = broker, msg.base
        if msg.kind == "events" and isinstance(msg.payload, dict):
            self._event(view, msg.payload)
        elif msg.kind == "state" and isinstance(msg.payload, dict):
            self._state(view, msg.payload)
        elif msg.kind == "availability":
            online = msg.payload == "online" if msg.payload is not None else None
            if online != view.online:
                view.online = online
                self._changed(view, game_changed=False)
        elif msg.kind == "response" and isinstance(msg.payload, dict):
            self.notify("response", {"board": view.pairing.board, **msg.payload})
        elif msg.kind == "pgn" and isinstance(msg.payload, str):
            view.bridge_pgn = msg.payload or None
            live = view.games.live()
            if (live.needs_resync or (live.number is None and not live.moves)
                    or (view.state_game is not None and live.number is not None and view.state_game > live.number)):
                self._resync(view)
            elif msg.retained:
                self._catch_up(view)

    def _unknown_board(self, msg: BridgeMessage) -> None:
        """Log a board id not in the round once (the ids remembered are bounded: old ones are forgotten)."""
        key = f"{msg.base}/{msg.board_id}"
        if key in self._unknown:
            self._unknown.move_to_end(key)
            return
        self._unknown[key] = None
        self.unknown_boards += 1
        if len(self._unknown) > UNKNOWN_BOARDS_KEPT:
            self._unknown.popitem(last=False)
        if self.unknown_boards <= UNKNOWN_BOARDS_LOGGED:
            log.info("board %s is not in round %s's pairings: ignored", key, self.round.number)
        elif self.unknown_boards % UNKNOWN_BOARDS_SUM_EVERY == 0:
            log.warning("%s board ids not in round %s's pairings so far (latest %s): ignored",
                        self.unknown_boards, self.round.number, key)

    def _reject(self, view: BoardView, event: dict[str, Any], why: str) -> None:
        view.rejected += 1
        if view.rejected <= REJECTS_LOGGED or view.rejected % REJECTS_LOG_EVERY == 0:
            log.warning("board %s: event not used (%s; %s so far)", view.pairing.board_id, why, view.rejected)

    def _event(self, view: BoardView, event: dict[str, Any]) -> None:
        session, seq = event.get("session"), event.get("seq")
        if isinstance(session, str) and isinstance(seq, int):
            last = view.sessions_seq.get(session)
            if last is not None and seq <= last:
                return  # already seen (QoS 1 redelivery)
            view.sessions_seq[session] = seq
        why = bridge_topics.check_event(event)
        if why is not None:
            if not why.startswith("unknown event type"):
                self._reject(view, event, why)
            return
        ts = event.get("ts")
        view.last_event_ts = ts if isinstance(ts, str) and len(ts) <= 40 else _now_iso()
        if not isinstance(ts, str):
            event = {**event, "ts": view.last_event_ts}
        kind = event.get("type")
        if self._console_event(view, event):
            self.archive.add_event(view.pairing.board, event)
            self._dirty.set()  # the writer flushes the archive
        if kind == "alert" or kind in REJECTIONS:
            return
        if kind in ("game_resumed", "move"):
            self._play_after_declared(view, event)
        if view.games.apply(event):
            self._changed(view)
        elif view.games.live().needs_resync:
            self._illegal_move(view, event)
            self._resync(view)

    def _console_event(self, view: BoardView, event: dict[str, Any], restoring: bool = False) -> bool:
        """Give one checked event to the console (timelines, claim windows, alerts); whether it was new."""
        number = view.pairing.board
        kept = self.console.on_event(number, event)
        for closed in self.console.closed_windows(number, event):
            self.notify("alert", closed.to_json())
        view.extras = self.console.extras(number)
        kind = event.get("type")
        if kind != "alert" and kind not in REJECTIONS:
            return kept
        if kind in REJECTIONS:  # the arbiter must know his command did nothing: an alert of its own
            detail = {k: event[k] for k in ("reason", "result", "declared", "moves", "fen") if k in event}
            event = {**event, "code": kind, "article": "", "detail": detail}
        # ``seq`` survives bridge restarts (new session, same journal): an alert replayed then is no news
        seq = event.get("seq") if type(event.get("seq")) is int else None
        key = (event.get("game"), event.get("ply"), event.get("code"), seq)
        if seq is not None and key in view.alerts_seen:
            return False
        view.alerts_seen.add(key)
        if restoring and any(a.board == number and a.key == key for a in self.alerts):
            return False  # still listed from before a round switch
        self._alert(view, event, key)
        return True

    def _illegal_move(self, view: BoardView, event: dict[str, Any]) -> None:
        """A move the board's game cannot have (refused: the outputs stay legal games): the arbiter sees it
        at once, before the bridge's PGN or a resync puts the game right."""
        game = view.games.live()
        if game.illegal is None:
            return
        (ply, uci), game.illegal = game.illegal, None
        key = (game.number, ply, "illegal_move", uci)
        if key in view.alerts_seen:
            return
        view.alerts_seen.add(key)
        self._alert(view, {"code": "illegal_move", "article": "", "ply": ply, "ts": event.get("ts"),
                           "game": game.number,
                           "detail": {"uci": uci, "fen": game.board(ply - 1).fen() if ply <= game.ply + 1 else None,
                                      "kept_plies": game.ply}}, key)

    def _play_after_declared(self, view: BoardView, event: dict[str, Any]) -> None:
        """The board shows play after a result declared through the bridge (pieces put back, or play really
        went on): the result stands, the arbiter is told once (clearing the result lets the plies in)."""
        number = event.get("game") if type(event.get("game")) is int else None
        game = view.games.game(number)
        if game is None or not game.frozen_by_declaration:
            return
        key = (game.number, game.declared_ply, "play_after_result", None)
        if key in view.alerts_seen:
            return
        view.alerts_seen.add(key)
        self._alert(view, {"code": "play_after_result", "article": "", "ply": (game.declared_ply or 0) + 1,
                           "ts": event.get("ts"), "game": game.number,
                           "detail": {"result": game.results.arbiter, "declared_ply": game.declared_ply,
                                      "shown": event.get("type")}}, key)

    def _catch_up(self, view: BoardView) -> None:
        """After a (re)subscription: take the plies made while this consumer was away from the retained PGN when
        it extends the game as known here (no later event may come to show the gap: the game may be over)."""
        live = view.games.live()
        try:
            game = chess.pgn.read_game(io.StringIO(view.bridge_pgn or ""))
        except (ValueError, IndexError):
            return
        if game is None or game.errors or game.board().fen() != chess.Board(live.start_fen,
                                                                             chess960=live.chess960).fen():
            return
        theirs = [m.uci() for m in game.mainline_moves()]
        ours = [p.uci for p in live.moves]
        if len(theirs) > len(ours) and theirs[:len(ours)] == ours and view.games.adopt(game, view.state_game):
            log.info("board %s: %d plies made while away, from the bridge's PGN", view.pairing.board_id,
                     len(theirs) - len(ours))
            self._changed(view)

    def _resync(self, view: BoardView) -> None:
        if not view.bridge_pgn:
            return
        try:
            game = chess.pgn.read_game(io.StringIO(view.bridge_pgn))
        except (ValueError, IndexError):
            game = None
        if game is None or game.errors:
            return
        if view.games.adopt(game, view.state_game):
            log.info("board %s: resynced from the bridge's PGN (%s plies)", view.pairing.board_id,
                     view.games.live().ply)
            self._changed(view)

    def _state(self, view: BoardView, payload: dict[str, Any]) -> None:
        state = bridge_topics.board_state(payload)
        changed = False
        if state.game is not None:
            view.state_game = state.game
        if state.in_sync is not None and state.in_sync != view.in_sync:
            view.in_sync, changed = state.in_sync, True
            self.console.on_sync(view.pairing.board, state.in_sync, _now_iso())
            view.extras = self.console.extras(view.pairing.board)
        if state.occupancy is not None and state.occupancy != view.occupancy:
            view.occupancy = state.occupancy
            live = view.games.live()
            if live.number is not None and state.game is not None and state.game != live.number:
                pass  # the state of another game than the one followed: its position is not ours
            elif (result := kings_result(live.position(), state.occupancy)) is not None and \
                    live.set_result("kings", result, "kings in the centre"):
                log.info("board %s: kings in the centre: %s", view.pairing.board, result)
                self._changed(view)
                return
        if changed:
            self._changed(view, game_changed=False)

    def _alert(self, view: BoardView, event: dict[str, Any], key: tuple[Any, ...] = ()) -> None:
        ply = event.get("ply")
        detail = event.get("detail")
        ts = event.get("ts")
        entry = AlertEntry(
            id=self._next_alert, board=view.pairing.board, board_id=view.pairing.board_id,
            code=str(event.get("code", "?")), article=str(event.get("article", "")),
            ply=ply if isinstance(ply, int) else None,
            ts=ts if isinstance(ts, str) else view.last_event_ts or _now_iso(),
            detail=detail if isinstance(detail, dict) else {}, key=key,
        )
        self._next_alert += 1
        self.console.on_alert(entry, event)
        self.alerts.append(entry)
        del self.alerts[:-ALERT_FEED_LIMIT]
        self.notify("alert", entry.to_json())

    # -- the arbiter's actions ---------------------------------------------------------------------
    def acknowledge(self, alert_id: int, by: str | None = None) -> AlertEntry:
        for entry in self.alerts:
            if entry.id == alert_id:
                if not entry.acked:
                    entry.acked, entry.acked_at, entry.acked_by = True, _now_iso(), by
                    if entry.board is not None and entry.key:
                        self.archive.add_ack(entry.board, entry.key, by, entry.acked_at)
                    self.notify("ack", entry.to_json())
                return entry
        raise ActionError(f"no alert {alert_id}")

    def view(self, board: int) -> BoardView:
        try:
            return self.by_number[board]
        except KeyError:
            raise ActionError(f"no board {board} in round {self.round.number}") from None

    async def _send(self, view: BoardView, name: str, **fields: Any) -> dict[str, Any]:
        if self.publish is None:
            raise ActionError("not connected to a bridge")
        base = view.base or self.tournament.brokers[view.broker].bases[0]
        topic = bridge_topics.set_topic(base, view.pairing.board_id)
        self._transactions += 1
        fields["transaction"] = f"arbiter-{self._transactions}"
        payload = bridge_topics.command(name, **fields)
        await self.publish(view.broker, topic, payload)
        log.info("arbiter: %s %s", topic, payload.decode())
        return {"topic": topic, "payload": json.loads(payload)}

    async def promote(self, board: int, piece: str) -> dict[str, Any]:
        piece = piece.lower()
        if piece not in PROMOTION_PIECES:
            raise ActionError(f"promotion piece must be one of {', '.join(PROMOTION_PIECES)}")
        return await self._send(self.view(board), "promote", piece=piece)

    async def takeback(self, board: int, ply: int) -> dict[str, Any]:
        view = self.view(board)
        if ply < 1 or ply > view.game.ply:
            raise ActionError(f"takeback ply must be between 1 and {view.game.ply}")
        return await self._send(view, "takeback", ply=ply)

    async def setup(self, board: int, fen: str, chess960: bool = False) -> dict[str, Any]:
        try:
            position = chess.Board(fen, chess960=chess960)
        except ValueError as exc:
            raise ActionError(f"bad FEN: {exc}") from None
        if not position.is_valid():
            raise ActionError("the FEN is not a valid position")
        view = self.view(board)
        sent = await self._send(view, "setup", fen=position.fen(), chess960=chess960)
        games = view.games
        if games.allow is None and games.held is None and (games.current.ply or games.current.has_result):
            # the game the arbiter sets up is the round's: in place of an unfinished one, after a finished one
            games.permit(Allow.NEXT if games.current.has_result else Allow.REPLACE)
            self._changed(view)
        return sent

    async def assign(self, board: int) -> dict[str, Any]:
        """Tell the bridge who plays on a board (so its own PGN carries the names)."""
        view = self.view(board)
        p = view.pairing
        return await self._send(view, "assign", round=str(self.round.number), board=str(p.board),
                                white=p.white.name, black=p.black.name)

    def record_result(self, board: int, result: str, entry: int | None = None) -> dict[str, Any]:
        """Record the arbiter's result (``*`` clears it) for the board's game ``entry`` (from 1; the
        latest by default): it wins over the board and the kings. Saved at once."""
        norm = normalize_result(result)
        if norm is None:
            raise ActionError(f"unknown result {result!r}")
        view = self.view(board)
        entries = view.games.entries
        if entry is not None and not 1 <= entry <= len(entries):
            raise ActionError(f"board {board} has {len(entries)} game(s) in this round")
        game = entries[-1] if entry is None else entries[entry - 1]
        if game.set_result("arbiter", norm):
            if game.needs_resync and game is view.games.live():
                self._resync(view)  # a declared result cleared: the plies the bridge shows since come in
            self._changed(view)
            self._save_due = True
            self.save_state()
        return view.to_json()

    def _check_lichess_room(self, board: int) -> None:
        """Refuse a further game on ``board`` that would take its lichess round over the games lichess takes
        by push (the round would otherwise lose games silently there)."""
        limit = self.tournament.settings.lichess_max_games
        for target in self.tournament.lichess_targets(self.round.number):
            if board not in target.boards:
                continue
            games = sum(len(v.games.entries) + (1 if v.games.allow is Allow.NEXT else 0)
                        for n, v in self.by_number.items() if n in target.boards)
            if games + 1 > limit:
                raise ActionError(f"lichess round {target.round_id} would get {games + 1} games, above the "
                                  f"{limit} lichess takes by push: give boards {target.boards.start}-"
                                  f"{target.boards.stop - 1} another lichess round first")

    def permit_game(self, board: int, allow: str | None) -> dict[str, Any]:
        """The arbiter allows the board's next game (``next``: a further game of the board in the round;
        ``replace``: it replaces the round's game; None: withdraw). A game already held is taken at once."""
        try:
            mode = Allow(allow) if allow not in (None, "", "none") else None
        except ValueError:
            raise ActionError("allow must be next, replace or none") from None
        view = self.view(board)
        if mode is Allow.NEXT:
            self._check_lichess_room(board)
        done = view.games.permit(mode)
        log.info("arbiter: board %s: %s", board, done)
        self._changed(view)
        self.save_state()
        return {**view.to_json(), "done": done}
