"""The broadcaster's state: every board of the round, the alert feed, the round PGN, the arbiter's actions.

Pure asyncio, no network of its own: the MQTT consumer feeds it :class:`BridgeMessage` objects, the web
server reads it and calls its actions, which go out through the ``publish`` function it is given.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import io
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess
import chess.pgn

from touchmove.broadcast import bridge_topics
from touchmove.broadcast.board_svg import render_many, render_svg
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.console import ConsoleState, both_clocks
from touchmove.broadcast.live_pgn import LiveGame, RoundPgn, write_atomically
from touchmove.broadcast.results import kings_result, normalize_result
from touchmove.broadcast.tournament import Pairing, Tournament

log = logging.getLogger(__name__)

#: ``publish(broker_index, topic, payload)``: sends one MQTT message (QoS 1, not retained).
Publish = Callable[[int, str, bytes], Awaitable[None]]

PROMOTION_PIECES = ("q", "r", "b", "n")
ALERT_FEED_LIMIT = 1000
LISTENER_QUEUE = 2000
SVG_BATCH = 16


class ActionError(Exception):
    """An arbiter action that cannot be done (unknown board, bad value, no bridge connection)."""


@dataclass
class AlertEntry:
    id: int
    board: int | None
    board_id: str
    code: str
    article: str
    ply: int | None
    ts: str
    detail: dict[str, Any]
    acked: bool = False
    acked_at: str | None = None
    acked_by: str | None = None
    #: Whether the alert can still be acted on (see :func:`touchmove.broadcast.timeline.claim_window`).
    window: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "board": self.board, "board_id": self.board_id, "code": self.code,
            "article": self.article, "ply": self.ply, "ts": self.ts, "detail": self.detail,
            "acked": self.acked, "acked_at": self.acked_at, "acked_by": self.acked_by, "window": self.window,
        }


@dataclass
class BoardView:
    """One physical board of the round and what is known of it."""

    pairing: Pairing
    game: LiveGame = field(default_factory=LiveGame)
    online: bool | None = None
    in_sync: bool | None = None
    occupancy: int | None = None
    broker: int = 0
    base: str | None = None
    sessions_seq: dict[str, int] = field(default_factory=dict)
    bridge_pgn: str | None = None
    last_event_ts: str | None = None
    state_game: int | None = None
    alerts_seen: set[tuple[Any, ...]] = field(default_factory=set)
    #: Fields the console adds to the board's JSON (see :class:`~touchmove.broadcast.console.ConsoleState`).
    extras: dict[str, Any] = field(default_factory=dict)
    _svg: tuple[int, str] | None = None

    def last_move(self) -> str | None:
        if not self.game.moves:
            return None
        ply = self.game.ply
        board = chess.Board(self.game.start_fen, chess960=self.game.chess960)
        number = board.fullmove_number + (ply - 1 + (board.turn == chess.BLACK)) // 2
        white_moved = (ply % 2 == 1) == (board.turn == chess.WHITE)
        return f"{number}{'.' if white_moved else '...'} {self.game.moves[-1].san}"

    def svg_args(self) -> tuple[str, bool, str | None]:
        """What :func:`~touchmove.broadcast.board_svg.render_svg` needs (plain values: it may run elsewhere)."""
        last = self.game.moves[-1].uci if self.game.moves else None
        return self.game.position().fen(), self.game.chess960, last

    def cached_svg(self) -> str | None:
        if self._svg is not None and self._svg[0] == self.game.version:
            return self._svg[1]
        return None

    def svg(self) -> str:
        cached = self.cached_svg()
        if cached is not None:
            return cached
        text = render_svg(*self.svg_args())
        self._svg = (self.game.version, text)
        return text

    def to_json(self, *, svg: bool = False) -> dict[str, Any]:
        p = self.pairing
        out: dict[str, Any] = {
            "board": p.board, "board_id": p.board_id,
            "white": {"name": p.white.name, "title": p.white.title, "elo": p.white.elo},
            "black": {"name": p.black.name, "title": p.black.title, "elo": p.black.elo},
            "game": self.game.number, "ply": self.game.ply, "fen": self.game.position().fen(),
            "last_move": self.last_move(),
            "clock_ms": self.game.moves[-1].clock_ms if self.game.moves else None,
            "in_sync": self.in_sync, "online": self.online,
            "result": self.game.results.effective(), "result_source": self.game.results.source(),
            "needs_resync": self.game.needs_resync, "version": self.game.version,
            "clocks": both_clocks(self.game.start_fen, (m.clock_ms for m in self.game.moves)),
            **self.extras,
        }
        if svg:
            cached = self.cached_svg()
            if cached is not None:
                out["svg"] = cached
        return out


def alert_meanings() -> dict[str, str]:
    """The rules engine's alert meanings for the dashboard (empty if the rules package cannot be loaded:
    the broadcaster itself never needs the engine)."""
    try:
        from touchmove.rules.events import ALERT_MEANINGS
    except Exception:  # the broadcast must run whatever state the engine package is in
        return {}
    return dict(ALERT_MEANINGS)


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Broadcaster:
    """All the boards of the round being broadcast."""

    def __init__(self, tournament: Tournament, *, output_dir: Path | None = None,
                 publish: Publish | None = None, write_interval: float = 0.1) -> None:
        self.tournament = tournament
        self.round = tournament.current_round()
        self.output_dir = output_dir if output_dir is not None else tournament.settings.output_dir
        self.publish = publish
        self.write_interval = write_interval
        self.boards: dict[str, BoardView] = {p.board_id: BoardView(p) for p in self.round.pairings}
        self.by_number: dict[int, BoardView] = {b.pairing.board: b for b in self.boards.values()}
        self.alerts: list[AlertEntry] = []
        self._next_alert = 1
        self.bridges: dict[str, str] = {}
        self._listeners: set[asyncio.Queue[tuple[str, dict[str, Any]]]] = set()
        self._no_svg: set[asyncio.Queue[tuple[str, dict[str, Any]]]] = set()
        self.console = ConsoleState(tournament.time_control)
        self._pgn = RoundPgn(tournament)
        self._pgn_cache: tuple[int, str] | None = None
        self.version = 0
        self.written_version = -1
        self._dirty = asyncio.Event()
        self._pending: dict[int, bool] = {}
        self._pending_event = asyncio.Event()
        self._svg_pending: set[int] = set()
        self._svg_event = asyncio.Event()
        #: Where pictures are rendered (a process pool set by the service); None: in the event loop.
        self.svg_executor: concurrent.futures.Executor | None = None
        self._pgn_listeners: list[Callable[[str], None]] = []
        self._unknown: set[str] = set()
        self._transactions = 0
        self._meanings = alert_meanings()
        for pairing in self.round.pairings:
            if pairing.result:
                self.by_number[pairing.board].game.set_result("arbiter", pairing.result)
        self._load_results()
        self._changed(None)

    # -- files -------------------------------------------------------------------------------------
    @property
    def pgn_path(self) -> Path:
        return self.output_dir / f"round-{self.round.number}.pgn"

    @property
    def results_path(self) -> Path:
        return self.output_dir / f"round-{self.round.number}-results.json"

    def _load_results(self) -> None:
        try:
            saved = json.loads(self.results_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return
        if not isinstance(saved, dict):
            return
        for number, result in saved.items():
            view = self.by_number.get(int(number)) if str(number).isdigit() else None
            norm = normalize_result(str(result)) if result is not None else None
            if view is not None and norm is not None:
                view.game.set_result("arbiter", norm)

    def _save_results(self) -> None:
        data = {str(n): v.game.results.arbiter for n, v in sorted(self.by_number.items())
                if v.game.results.arbiter}
        write_atomically(self.results_path, json.dumps(data, indent=1) + "\n")

    # -- the round PGN -----------------------------------------------------------------------------
    def round_pgn(self) -> str:
        if self._pgn_cache is None or self._pgn_cache[0] != self.version:
            games = {n: v.game for n, v in self.by_number.items()}
            self._pgn_cache = (self.version, self._pgn.render(games))
        return self._pgn_cache[1]

    def on_pgn(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(pgn_text)`` after each write of the round PGN (the lichess push uses it)."""
        self._pgn_listeners.append(callback)

    def write_now(self) -> Path:
        version = self.version
        text = self.round_pgn()
        write_atomically(self.pgn_path, text)
        self.written_version = version
        for cb in self._pgn_listeners:
            cb(text)
        return self.pgn_path

    async def run_writer(self) -> None:
        """Keep ``round-N.pgn`` current: written at most ``write_interval`` after each change."""
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            if self.written_version != self.version:
                try:
                    self.write_now()
                except OSError:
                    log.exception("writing %s failed", self.pgn_path)
            await asyncio.sleep(self.write_interval)

    # -- listeners (the dashboard's event stream) --------------------------------------------------
    def listen(self, *, svg: bool = True) -> asyncio.Queue[tuple[str, dict[str, Any]]]:
        """A queue of updates for one stream; ``svg=False``: without pictures (the console draws its own)."""
        queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue(LISTENER_QUEUE)
        self._listeners.add(queue)
        if not svg:
            self._no_svg.add(queue)
        return queue

    def unlisten(self, queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
        self._listeners.discard(queue)
        self._no_svg.discard(queue)

    def close_listeners(self) -> None:
        """End every event stream (server shutdown)."""
        for queue in list(self._listeners):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(("overflow", {}))
        self._listeners.clear()

    def _notify(self, kind: str, data: dict[str, Any]) -> None:
        for queue in list(self._listeners):
            if kind == "svg" and queue in self._no_svg:
                continue
            try:
                queue.put_nowait((kind, data))
            except asyncio.QueueFull:  # a client that does not read: drop it, it reconnects
                self._listeners.discard(queue)
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(("overflow", {}))

    def _changed(self, view: BoardView | None, *, game_changed: bool = True) -> None:
        """Note a change: the PGN writer and the dashboard streams pick it up (bursts are coalesced)."""
        if game_changed:
            self.version += 1
            self._dirty.set()
        if view is not None and self._listeners:
            number = view.pairing.board
            self._pending[number] = self._pending.get(number, False) or game_changed
            self._pending_event.set()

    def flush_notifications(self) -> None:
        """Send one ``board`` update per changed board; its picture follows as an ``svg`` update."""
        pending, self._pending = self._pending, {}
        for number, position_changed in pending.items():
            self._notify("board", self.by_number[number].to_json())
            if position_changed:
                self._svg_pending.add(number)
        if self._svg_pending:
            self._svg_event.set()

    async def run_notifier(self) -> None:
        """Feed the dashboard streams: what changed while messages were being handled, once."""
        while True:
            await self._pending_event.wait()
            self._pending_event.clear()
            self.flush_notifications()

    async def run_svg_renderer(self) -> None:
        """Render the pictures of boards whose position changed (in ``svg_executor`` when there is one,
        so that the event loop keeps handling messages) and send them as ``svg`` updates."""
        loop = asyncio.get_running_loop()
        while True:
            await self._svg_event.wait()
            self._svg_event.clear()
            numbers, self._svg_pending = sorted(self._svg_pending), set()
            if not self._listeners - self._no_svg:
                continue
            jobs: list[tuple[int, int, tuple[str, bool, str | None]]] = []
            for number in numbers:
                view = self.by_number[number]
                cached = view.cached_svg()
                if cached is not None:
                    self._notify("svg", {"board": number, "ply": view.game.ply, "version": view.game.version,
                                         "svg": cached})
                else:
                    jobs.append((number, view.game.version, view.svg_args()))
            for start in range(0, len(jobs), SVG_BATCH):
                batch = jobs[start:start + SVG_BATCH]
                args = [job[2] for job in batch]
                if self.svg_executor is not None:
                    svgs = await loop.run_in_executor(self.svg_executor, render_many, args)
                else:
                    svgs = render_many(args)
                    await asyncio.sleep(0)
                for (number, version, _), svg in zip(batch, svgs, strict=True):
                    view = self.by_number[number]
                    if view.game.version != version:
                        continue  # moved on meanwhile: it is pending again
                    view._svg = (version, svg)
                    self._notify("svg", {"board": number, "ply": view.game.ply, "version": version, "svg": svg})

    def snapshot(self, *, svg: bool = True) -> dict[str, Any]:
        """Everything the dashboard shows; the pictures already rendered (the others follow as ``svg``)."""
        t = self.tournament
        if svg:
            missing = {n for n, v in self.by_number.items() if v.cached_svg() is None}
            if missing:
                self._svg_pending |= missing
                self._svg_event.set()
        return {
            "event": t.event, "site": t.site, "round": self.round.number, "time_control": t.time_control,
            "boards": [self.by_number[n].to_json(svg=svg) for n in sorted(self.by_number)],
            "alerts": [a.to_json() for a in self.alerts],
            "bridges": dict(self.bridges),
            "meanings": self._meanings,
        }

    # -- messages from the bridges -----------------------------------------------------------------
    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        """Apply one decoded bridge message."""
        if msg.board_id is None:
            if msg.kind == "bridge_state" and isinstance(msg.payload, dict):
                state = str(msg.payload.get("state", "?"))
                self.bridges[msg.base] = state
                self._notify("bridge", {"base": msg.base, "state": state})
                if state == "offline":  # the bridge's last will: its boards' availability is stale
                    for stale in self.boards.values():
                        if stale.base == msg.base and stale.online:
                            stale.online = False
                            self._changed(stale, game_changed=False)
            return
        view = self.boards.get(msg.board_id)
        if view is None:
            if msg.board_id not in self._unknown:
                self._unknown.add(msg.board_id)
                log.info("board %s/%s is not in round %s's pairings: ignored",
                         msg.base, msg.board_id, self.round.number)
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
            self._notify("response", {"board": view.pairing.board, **msg.payload})
        elif msg.kind == "pgn" and isinstance(msg.payload, str):
            view.bridge_pgn = msg.payload or None
            if view.game.needs_resync or (view.game.number is None and not view.game.moves):
                self._resync(view)

    def _event(self, view: BoardView, event: dict[str, Any]) -> None:
        session, seq = event.get("session"), event.get("seq")
        if isinstance(session, str) and isinstance(seq, int):
            last = view.sessions_seq.get(session)
            if last is not None and seq <= last:
                return  # already seen (QoS 1 redelivery)
            view.sessions_seq[session] = seq
        ts = event.get("ts")
        view.last_event_ts = ts if isinstance(ts, str) else _now_iso()
        kind = event.get("type")
        number = view.pairing.board
        self.console.on_event(number, event if isinstance(ts, str) else {**event, "ts": view.last_event_ts})
        for closed in self.console.closed_windows(number, event):
            self._notify("alert", closed.to_json())
        view.extras = self.console.extras(number)
        if kind == "alert":
            # ``seq`` survives bridge restarts (new session, same journal): an alert replayed then is no news
            key = (event.get("game"), event.get("ply"), event.get("code"), seq)
            if isinstance(seq, int) and key in view.alerts_seen:
                return
            view.alerts_seen.add(key)
            self._alert(view, event)
            return
        if view.game.apply(event):
            self._changed(view)
        elif view.game.needs_resync:
            self._resync(view)

    def _resync(self, view: BoardView) -> None:
        if not view.bridge_pgn:
            return
        try:
            game = chess.pgn.read_game(io.StringIO(view.bridge_pgn))
        except (ValueError, IndexError):
            game = None
        if game is None or game.errors:
            return
        if view.game.adopt(game, view.state_game):
            log.info("board %s: resynced from the bridge's PGN (%s plies)", view.pairing.board_id,
                     view.game.ply)
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
            result = kings_result(view.game.position(), state.occupancy)
            if result is not None and view.game.set_result("kings", result, "kings in the centre"):
                log.info("board %s: kings in the centre: %s", view.pairing.board, result)
                self._changed(view)
                return
        if changed:
            self._changed(view, game_changed=False)

    def _alert(self, view: BoardView, event: dict[str, Any]) -> None:
        ply = event.get("ply")
        detail = event.get("detail")
        entry = AlertEntry(
            id=self._next_alert, board=view.pairing.board, board_id=view.pairing.board_id,
            code=str(event.get("code", "?")), article=str(event.get("article", "")),
            ply=ply if isinstance(ply, int) else None, ts=view.last_event_ts or _now_iso(),
            detail=detail if isinstance(detail, dict) else {},
        )
        self._next_alert += 1
        self.console.on_alert(entry, event)
        self.alerts.append(entry)
        del self.alerts[:-ALERT_FEED_LIMIT]
        self._notify("alert", entry.to_json())

    # -- the arbiter's actions ---------------------------------------------------------------------
    def acknowledge(self, alert_id: int, by: str | None = None) -> AlertEntry:
        for entry in self.alerts:
            if entry.id == alert_id:
                if not entry.acked:
                    entry.acked, entry.acked_at, entry.acked_by = True, _now_iso(), by
                    self._notify("ack", entry.to_json())
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
        return await self._send(self.view(board), "setup", fen=position.fen(), chess960=chess960)

    async def assign(self, board: int) -> dict[str, Any]:
        """Tell the bridge who plays on a board (so its own PGN carries the names)."""
        view = self.view(board)
        p = view.pairing
        return await self._send(view, "assign", round=str(self.round.number), board=str(p.board),
                                white=p.white.name, black=p.black.name)

    def record_result(self, board: int, result: str) -> dict[str, Any]:
        """Record the arbiter's result (``*`` clears it): it wins over the board and the kings."""
        norm = normalize_result(result)
        if norm is None:
            raise ActionError(f"unknown result {result!r}")
        view = self.view(board)
        if view.game.set_result("arbiter", norm):
            self._save_results()
            self._changed(view)
        return view.to_json()
