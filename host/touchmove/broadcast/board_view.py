"""What the broadcaster knows of one board of the round (:class:`BoardView`) and of one alert of the feed
(:class:`AlertEntry`), and how the console and the streams show them (``to_json``).

Plain data with its JSON; the :class:`~touchmove.broadcast.broadcaster.Broadcaster` owns and changes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import chess

from touchmove.broadcast.board_svg import render_svg
from touchmove.broadcast.console import both_clocks
from touchmove.broadcast.live_pgn import LiveGame
from touchmove.broadcast.round_state import BoardGames
from touchmove.broadcast.tournament import Pairing

#: What the console says of the alerts that are not the rules engine's.
CONSOLE_MEANINGS = {
    "board_identity": "a port says the id of a board bound to another port (or an id other than its own): "
                      "nothing was rebound; check the cables before its moves go to the wrong game",
    "result_rejected": "a result declared for the board was not applied (see the reason): the game's result "
                       "is not what was declared",
    "resync_rejected": "an arbiter's resync was not applied (see the reason): the board is still out of step",
    "illegal_move": "the bridge sent a move the game cannot have: it was not taken (the outputs and the "
                    "lichess push stay a legal game); the bridge's PGN or a resync puts the game right",
    "play_after_result": "the board shows play after a result declared through the bridge (pieces put back, "
                         "or play went on): the result stands and later plies are not taken; clear the "
                         "result if play really went on",
    "board_silent": "the board stopped answering (a vendor board's adapter): its last position is in the detail; "
                    "check its cable and power",
    "board_answering": "the board answers again: its whole position is read and compared",
    "board_rotated": "the board is set up turned round: its squares are turned from now on",
    "board_reset": "the board restarted by itself (detail.cause: its watchdog, or a fatal error in its firmware): "
                   "the game went on from the board's position; check the board if it happens again",
    "journal_replaced": "the bridge's journal file was deleted, moved or replaced while it ran: a new journal was "
                        "started at its path (detail.copied: a copy of the lost one); see detail.message",
    "board_serial_changed": "a board bound to a USB serial number said hello on a port with another serial "
                            "number (detail.expected, detail.found): the game goes on; check which board is on "
                            "the port",
    "engine_rebuilt": "the board's rules engine failed on an input (detail.error, detail.input): it was rebuilt "
                      "(detail.rebuilt_from: its checkpoint and the journal, or nothing: then the board needs a "
                      "resync); that input's own events were not published",
    "events_not_journaled": "after a crash while the journal could not write, events detail.first_seq to "
                            "detail.last_seq were published but never journaled: their plies come again as "
                            "recovered moves",
    "board_error": "the board's firmware reports a fault (detail.why: a board.json it refused and will not scan "
                   "until fixed, sensor bus errors, commands it could not answer, a fatal error): see detail.message",
}



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
    #: (game, ply, code, seq) of the event it came from: what an acknowledgement is archived under.
    key: tuple[Any, ...] = ()

    def to_json(self, *, arbiter_data: bool = False) -> dict[str, Any]:
        """The alert as the consoles get it; who acknowledged it only with ``arbiter_data`` (the answers
        to a request carrying a valid arbiter token: the public stream and state leave it out)."""
        out = {
            "id": self.id, "board": self.board, "board_id": self.board_id, "code": self.code,
            "article": self.article, "ply": self.ply, "ts": self.ts, "detail": self.detail,
            "acked": self.acked, "acked_at": self.acked_at, "window": self.window,
        }
        if arbiter_data:
            out["acked_by"] = self.acked_by
        return out


@dataclass
class BoardView:
    """One physical board of the round and what is known of it."""

    pairing: Pairing
    games: BoardGames = field(default_factory=BoardGames)
    online: bool | None = None
    in_sync: bool | None = None
    occupancy: int | None = None
    broker: int = 0
    base: str | None = None
    sessions_seq: dict[str, int] = field(default_factory=dict)
    #: Events that came before one of their seq's predecessors, (session, seq) -> event, held until it comes
    #: (:meth:`~.bridge_ingest.BridgeIngest.handle`), and since when (the broadcaster's clock).
    waiting: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    waiting_since: float | None = None
    #: A catch-up from the bridge's PGN is scheduled (the state said it is ahead; its events may still come).
    catch_up_due: bool = False
    bridge_pgn: str | None = None
    last_event_ts: str | None = None
    state_game: int | None = None
    #: The ply of the bridge's game as its latest ``state`` says (None: not said).
    state_ply: int | None = None
    #: The kings seen in the centre and not yet a result: (result, occupancy, since, by the broadcaster's clock).
    kings_seen: tuple[str, int, float] | None = None
    alerts_seen: set[tuple[Any, ...]] = field(default_factory=set)
    rejected: int = 0
    #: Fields the console adds to the board's JSON (see :class:`~touchmove.broadcast.console.ConsoleState`).
    extras: dict[str, Any] = field(default_factory=dict)
    _svg: tuple[int, str] | None = None

    @property
    def game(self) -> LiveGame:
        """The round's (latest) game on this board."""
        return self.games.current

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

    def keep_svg(self, version: int, svg: str) -> None:
        """Remember the picture drawn elsewhere for game ``version`` (used while the game is still there)."""
        self._svg = (version, svg)

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
            "forfeit": self.game.results.forfeit,
            "needs_resync": self.game.needs_resync, "version": self.game.version,
            "entries": len(self.games.entries),
            "held": _held_json(self.games.held, self.games.opening.held),
            "allow": self.games.allow.value if self.games.allow is not None else None,
            "rejected_events": self.rejected,
            "clocks": both_clocks(self.game.start_fen, (m.clock_ms for m in self.game.moves)),
            **self.extras,
        }
        if svg:
            cached = self.cached_svg()
            if cached is not None:
                out["svg"] = cached
        return out


def _held_json(game: LiveGame | None, before_round: bool = False) -> dict[str, Any] | None:
    """A game the board plays that is not (yet) the round's: what the arbiter needs to decide
    (``before_round``: it was on the board when the round opened, perhaps another round's)."""
    if game is None:
        return None
    return {"game": game.number, "ply": game.ply, "fen": game.position().fen(),
            "result": game.results.effective(), "before_round": before_round}


def alert_meanings() -> dict[str, str]:
    """The rules engine's alert meanings for the dashboard (empty if the rules package cannot be loaded:
    the broadcaster itself never needs the engine)."""
    try:
        from touchmove.rules.events import ALERT_MEANINGS
    except Exception:  # the broadcast must run whatever state the engine package is in
        return dict(CONSOLE_MEANINGS)
    return {**CONSOLE_MEANINGS, **ALERT_MEANINGS}
