"""The bridges' messages taken into the round: events (deduplicated, checked, given to the console and the
board's games), states, availability, the retained PGN (resync and catch-up), command responses.

It changes the round only through :class:`IngestTarget` (:class:`~.round_storage.RoundStorage` and the
consoles' streams, wired by the :class:`~.broadcaster.Broadcaster`).
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

import chess
import chess.pgn

from touchmove.broadcast import bridge_topics
from touchmove.broadcast.board_view import AlertEntry, BoardView
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.console import ConsoleState
from touchmove.broadcast.event_archive import EventArchive
from touchmove.broadcast.results import kings_result
from touchmove.broadcast.round_storage import now_iso
from touchmove.broadcast.tournament import Round
from touchmove.clocks import Clock
from touchmove.mqtt.events import check_event

log = logging.getLogger(__name__)

#: Unknown board ids remembered (beyond this the oldest are forgotten) and logged one by one (then in sums).
UNKNOWN_BOARDS_KEPT = 1024
UNKNOWN_BOARDS_LOGGED = 50
UNKNOWN_BOARDS_SUM_EVERY = 500
#: Rejected events logged per board (then every REJECTS_LOG_EVERY-th).
REJECTS_LOGGED = 5
REJECTS_LOG_EVERY = 100
#: An arbiter's command the board's engine did not apply (the bridge publishes why): an alert for the console.
REJECTIONS = ("result_rejected", "resync_rejected")
#: How long the kings must stand in the centre (s, the board's occupancy unchanged) before they are a result: a
#: reading of one scan (a piece set down off-centre, a sensor misread) is none. The vendor boards' adapter waits
#: as long (touchmove.boards.adapter.RESULT_STEADY_MS).
KINGS_STEADY_S = 1.2
#: How long an event that came before one of its predecessors (a seq missing in between) is held, waiting for
#: the missing ones: a bridge sends again what a dead node took within a second or two of noticing. After that the
#: held events are applied in seq order anyway (the missing plies then come from the bridge's retained PGN).
GAP_WAIT_S = 2.0
#: ... unless messages received are still queued, not yet handed over (a broadcaster behind: the missing event may
#: be among them): then it waits for the queue to empty, up to this long.
GAP_WAIT_MAX_S = 30.0


class IngestTarget(Protocol):
    """What taking the bridges' messages in reads and changes."""

    @property
    def round(self) -> Round: ...
    @property
    def boards(self) -> dict[str, BoardView]: ...
    @property
    def by_number(self) -> dict[int, BoardView]: ...
    @property
    def console(self) -> ConsoleState: ...
    @property
    def archive(self) -> EventArchive: ...
    @property
    def alerts(self) -> list[AlertEntry]: ...
    @property
    def dirty(self) -> asyncio.Event: ...

    @property
    def clock(self) -> Clock: ...

    def changed(self, view: BoardView | None, *, game_changed: bool = True) -> None: ...
    def add_alert(self, view: BoardView, event: dict[str, Any], key: tuple[Any, ...] = ()) -> None: ...
    def notify(self, kind: str, data: dict[str, Any]) -> None: ...


class BridgeIngest:
    """Applies decoded bridge messages; counts what it could not use."""

    def __init__(self, target: IngestTarget) -> None:
        self.target = target
        #: Each bridge's base topic and its last ``state`` (``online``, ``offline``...).
        self.bridges: dict[str, str] = {}
        self.unknown_boards = 0
        self._unknown: OrderedDict[str, None] = OrderedDict()
        #: Called with a board's view when its bridge says it is online (it was not, or not known to be).
        self.online_listeners: list[Callable[[BoardView], None]] = []
        #: Called with a board's view and the payload of each response its bridge gives to a command.
        self.response_listeners: list[Callable[[BoardView, dict[str, Any]], None]] = []
        #: The brokers (indexes) whose events may come out of order or be missed (QoS 0, a standby connection):
        #: an event whose seq's predecessor has not come is held (up to GAP_WAIT_S) until it does.
        self.hold_gaps: frozenset[int] = frozenset()
        #: Events held for a missing predecessor, and held events given up waiting for (applied with a gap).
        self.held_events = 0
        self.gaps_given_up = 0
        #: How many received messages are queued, not yet handed over (the MQTT link's; 0 without one).
        self.backlog: Callable[[], int] = lambda: 0

    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        """Apply one decoded bridge message."""
        target = self.target
        if msg.board_id is None:
            if msg.kind == "bridge_state" and isinstance(msg.payload, dict):
                state = str(msg.payload.get("state", "?"))
                self.bridges[msg.base] = state
                target.notify("bridge", {"base": msg.base, "state": state})
                if state == "offline":  # the bridge's last will: its boards' availability is stale
                    for stale in target.boards.values():
                        if stale.base == msg.base and stale.online:
                            stale.online = False
                            target.changed(stale, game_changed=False)
            return
        view = target.boards.get(msg.board_id)
        if view is None:
            self._unknown_board(msg)
            return
        view.broker, view.base = broker, msg.base
        if msg.kind == "events" and isinstance(msg.payload, dict):
            self._event(view, msg.payload, broker in self.hold_gaps)
        elif msg.kind == "state" and isinstance(msg.payload, dict):
            self._state(view, msg.payload, broker in self.hold_gaps)
        elif msg.kind == "availability":
            online = msg.payload == "online" if msg.payload is not None else None
            if online != view.online:
                view.online = online
                target.changed(view, game_changed=False)
                if online:
                    for listener in self.online_listeners:
                        listener(view)
        elif msg.kind == "response" and isinstance(msg.payload, dict):
            target.notify("response", {"board": view.pairing.board, **msg.payload})
            for answer in self.response_listeners:
                answer(view, msg.payload)
        elif msg.kind == "pgn" and isinstance(msg.payload, str):
            view.bridge_pgn = msg.payload or None
            live = view.games.live()
            if (live.needs_resync or (live.number is None and not live.moves)
                    or (view.state_game is not None and live.number is not None and view.state_game > live.number)):
                self.resync(view)
            elif msg.retained:
                self._catch_up(view)
            elif self._behind(view):
                self._catch_up_unless_events(view, broker in self.hold_gaps)

    def restore_console(self) -> None:
        """The round's events and acknowledgements kept by an earlier run (or before a round switch): the
        timelines, alerts and claim windows as they were; events the bridges send again are no news."""
        target = self.target
        count = 0
        for board, line in target.archive.read():
            view = target.by_number.get(board)
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
            for entry in target.alerts:
                if entry.board == board and entry.key == key and not entry.acked:
                    at, by = line.get("at"), line.get("by")
                    entry.acked, entry.acked_at = True, at if isinstance(at, str) else None
                    entry.acked_by = by if isinstance(by, str) else None
        if count:
            log.info("round %s: %s console events restored from %s", target.round.number, count,
                     target.archive.path)

    def resync(self, view: BoardView) -> None:
        """Take the board's game from the bridge's retained PGN, when it gives one that extends or replaces it."""
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
            self.target.changed(view)

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
        number = self.target.round.number
        if self.unknown_boards <= UNKNOWN_BOARDS_LOGGED:
            log.info("board %s is not in round %s's pairings: ignored", key, number)
        elif self.unknown_boards % UNKNOWN_BOARDS_SUM_EVERY == 0:
            log.warning("%s board ids not in round %s's pairings so far (latest %s): ignored",
                        self.unknown_boards, number, key)

    def _reject(self, view: BoardView, why: str) -> None:
        view.rejected += 1
        if view.rejected <= REJECTS_LOGGED or view.rejected % REJECTS_LOG_EVERY == 0:
            log.warning("board %s: event not used (%s; %s so far)", view.pairing.board_id, why, view.rejected)

    def _event(self, view: BoardView, event: dict[str, Any], hold_gaps: bool = False) -> None:
        """Take one event: drop it when seen already (by seq), hold it (``hold_gaps``) while one before it is
        missing, else apply it and then the held ones that follow it."""
        session, seq = event.get("session"), event.get("seq")
        if not (isinstance(session, str) and isinstance(seq, int)):
            self._apply_event(view, event)
            return
        last = view.sessions_seq.get(session)
        if last is not None and seq <= last:
            return  # already seen (QoS 1 redelivery, a bridge sending again, a second connection)
        if hold_gaps and last is not None and seq > last + 1:
            self._hold(view, session, seq, event)
            return
        view.sessions_seq[session] = seq
        self._apply_event(view, event)
        while view.waiting:
            following = view.waiting.pop((session, view.sessions_seq[session] + 1), None)
            if following is None:
                break
            view.sessions_seq[session] += 1
            self._apply_event(view, following)
        if not view.waiting:
            view.waiting_since = None

    def _hold(self, view: BoardView, session: str, seq: int, event: dict[str, Any]) -> None:
        """Keep an event until its predecessors come, or GAP_WAIT_S (then :meth:`release_held`)."""
        if (session, seq) in view.waiting:
            return
        view.waiting[(session, seq)] = event
        self.held_events += 1
        if view.waiting_since is not None:
            return
        view.waiting_since = self.target.clock.monotonic()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:        # no event loop (a direct call): nothing would wake the held event
            self.release_held(view)
            return
        loop.call_later(GAP_WAIT_S, self._release_if_waited, view)

    def _release_if_waited(self, view: BoardView) -> None:
        since = view.waiting_since
        if since is None or not view.waiting:
            return
        waited = self.target.clock.monotonic() - since
        if waited < GAP_WAIT_S * 0.99:
            asyncio.get_running_loop().call_later(GAP_WAIT_S - waited, self._release_if_waited, view)
        elif waited < GAP_WAIT_MAX_S and self.backlog() > 0:
            asyncio.get_running_loop().call_later(0.25, self._release_if_waited, view)   # the event may be queued
        else:
            self.release_held(view)

    def release_held(self, view: BoardView) -> None:
        """Apply a board's held events in seq order, the missing ones given up (the retained PGN fills the game)."""
        if view.waiting:
            self.gaps_given_up += 1
            log.warning("board %s: events before seq %s did not come within %.0f s: applied without them",
                        view.pairing.board_id, min(seq for _, seq in view.waiting), GAP_WAIT_S)
        for key in sorted(view.waiting, key=lambda k: k[1]):
            event = view.waiting.pop(key)
            last = view.sessions_seq.get(key[0])
            if last is not None and key[1] <= last:
                continue
            view.sessions_seq[key[0]] = key[1]
            self._apply_event(view, event)
        view.waiting_since = None

    def _apply_event(self, view: BoardView, event: dict[str, Any]) -> None:
        why = check_event(event)
        if why is not None:
            if not why.startswith("unknown event type"):
                self._reject(view, why)
            return
        ts = event.get("ts")
        view.last_event_ts = ts if isinstance(ts, str) and len(ts) <= 40 else now_iso()
        if not isinstance(ts, str):
            event = {**event, "ts": view.last_event_ts}
        kind = event.get("type")
        if self._console_event(view, event):
            self.target.archive.add_event(view.pairing.board, event)
            self.target.dirty.set()  # the writer flushes the archive
        if kind == "alert" or kind in REJECTIONS:
            return
        if kind in ("game_resumed", "move"):
            self._play_after_declared(view, event)
        if kind == "game_start" and view.kings_seen is not None:
            self.confirm_kings(view, moved_on=True)        # a new game set up while the kings stood in the centre
        if view.games.apply(event):
            self.target.changed(view)
        elif view.games.live().needs_resync:
            self._illegal_move(view, event)
            self.resync(view)

    def _console_event(self, view: BoardView, event: dict[str, Any], restoring: bool = False) -> bool:
        """Give one checked event to the console (timelines, claim windows, alerts); whether it was new."""
        target = self.target
        number = view.pairing.board
        kept = target.console.on_event(number, event)
        for closed in target.console.closed_windows(number, event):
            target.notify("alert", closed.to_json())
        view.extras = target.console.extras(number)
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
        if restoring and any(a.board == number and a.key == key for a in target.alerts):
            return False  # still listed from before a round switch
        target.add_alert(view, event, key)
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
        self.target.add_alert(view, {
            "code": "illegal_move", "article": "", "ply": ply, "ts": event.get("ts"), "game": game.number,
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
        self.target.add_alert(view, {
            "code": "play_after_result", "article": "", "ply": (game.declared_ply or 0) + 1,
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
            self.target.changed(view)

    def _behind(self, view: BoardView) -> bool:
        """Whether the bridge's state says its game (the one followed) has plies not known here: an event lost
        (a consumer restarting) and a resync that took a PGN older than the event that showed the gap leave the
        game short, and no later event may come to show it (the game may be over)."""
        live = view.games.live()
        return (view.state_ply is not None and view.state_ply > live.ply and not live.needs_resync
                and live.number is not None and view.state_game == live.number)

    def confirm_all_kings(self) -> None:
        """Take the kings that have stood in the centre long enough as their boards' results (:meth:`confirm_kings`
        for each board that showed them: a board whose occupancy stays as it is says nothing more)."""
        for view in list(self.target.boards.values()):
            if view.kings_seen is not None:
                self.confirm_kings(view)

    async def run_kings(self, period: float = 0.25) -> None:
        """Confirm the kings in the centre every ``period`` seconds (:meth:`confirm_all_kings`)."""
        while True:
            self.confirm_all_kings()
            await asyncio.sleep(period)

    def confirm_kings(self, view: BoardView, *, moved_on: bool = False) -> bool:
        """Take the kings ``view``'s board showed in the centre as its result once they have stood
        :data:`KINGS_STEADY_S` (called at each state and by :meth:`run_kings`), or at once when the board
        ``moved_on`` from them to something other than the game (cleared, set up, a new game) rather than back to
        the game's position (a misreading); return whether that changed the result."""
        seen = view.kings_seen
        if seen is None:
            return False
        if not moved_on:
            if view.occupancy != seen[1]:
                view.kings_seen = None
                return False
            if self.target.clock.monotonic() - seen[2] < KINGS_STEADY_S:
                return False
        view.kings_seen = None
        live = view.games.live()
        if kings_result(live.position(), seen[1]) != seen[0] or not live.set_result("kings", seen[0],
                                                                                   "kings in the centre"):
            return False
        log.info("board %s: kings in the centre: %s", view.pairing.board, seen[0])
        self.target.changed(view)
        return True

    def _catch_up_unless_events(self, view: BoardView, events_apart: bool) -> None:
        """The bridge's state or PGN says it is ahead: catch up from the PGN, at once, or (``events_apart``: the
        events come on connections of their own and may come a moment after the state) after GAP_WAIT_S if the
        events have not caught up by then (a PGN read per move would cost more than the move)."""
        if not events_apart:
            self._catch_up(view)
            return
        if view.catch_up_due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._catch_up(view)
            return
        view.catch_up_due = True

        due = self.target.clock.monotonic() + GAP_WAIT_S

        def later() -> None:
            if self.backlog() > 0 and self.target.clock.monotonic() < due - GAP_WAIT_S + GAP_WAIT_MAX_S:
                loop.call_later(0.25, later)       # the events may be queued
                return
            view.catch_up_due = False
            if self._behind(view) and view.bridge_pgn:
                self._catch_up(view)
        loop.call_later(GAP_WAIT_S, later)

    def _state(self, view: BoardView, payload: dict[str, Any], events_apart: bool = False) -> None:
        state = bridge_topics.board_state(payload)
        changed = False
        if state.game is not None:
            view.state_game = state.game
            view.games.note_state(state.game)
        view.state_ply = state.ply
        if self._behind(view) and view.bridge_pgn:
            self._catch_up_unless_events(view, events_apart)  # the PGN may have come first
        if state.in_sync is not None and state.in_sync != view.in_sync:
            view.in_sync, changed = state.in_sync, True
            self.target.console.on_sync(view.pairing.board, state.in_sync, now_iso())
            view.extras = self.target.console.extras(view.pairing.board)
        if state.occupancy is not None and state.occupancy != view.occupancy:
            view.occupancy = state.occupancy
            live = view.games.live()
            if live.number is not None and state.game is not None and state.game != live.number:
                pass  # the state of another game than the one followed: its position is not ours
            elif (result := kings_result(live.position(), state.occupancy)) is not None:
                if view.kings_seen is None or view.kings_seen[:2] != (result, state.occupancy):
                    view.kings_seen = (result, state.occupancy, self.target.clock.monotonic())
                if self.confirm_kings(view):
                    return
            elif view.kings_seen is not None and state.occupancy != int(live.position().occupied):
                self.confirm_kings(view, moved_on=True)    # the board went on to other things from the kings
            elif (live.results.kings is not None and state.occupancy == int(live.position().occupied)
                  and live.set_result("kings", None)):
                # the pieces stand as in the game again (the kings put back, or a misread scan over): the kings
                # meant no result (a claim from the pieces, never a verdict)
                log.info("board %s: the kings back on their squares: their result withdrawn", view.pairing.board)
                self.target.changed(view)
                return
        if changed:
            self.target.changed(view, game_changed=False)
