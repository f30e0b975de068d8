"""Per-board live games rebuilt from the bridge's events, and the round's multi-game PGN.

A :class:`LiveGame` follows one game of a board: ``game_start`` resets it, ``move`` appends (a repeated
ply with the same move is a duplicate and changes nothing), ``move_amended`` replaces a ply (later plies are
kept while they stay legal), ``takeback`` removes plies, ``game_end`` sets the board's result and
``game_resumed`` withdraws it. Every move is checked against python-chess before it is kept, so the PGN
written is always legal. Which game of a board belongs to the round is :mod:`.round_state`'s business.
A :class:`GameSnapshot` is a game frozen at one moment: the public outputs (delayed or not) render those.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeGuard

import chess
import chess.pgn

from touchmove.broadcast.results import DOUBLE_FORFEIT, ResultBook
from touchmove.broadcast.tournament import Pairing, Tournament

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PlyRecord:
    uci: str
    san: str
    clock_ms: int | None = None


@dataclass(frozen=True, slots=True)
class GameSnapshot:
    """One game as it stood at one moment (immutable: the delay line keeps these)."""

    start_fen: str
    chess960: bool
    number: int | None
    moves: tuple[PlyRecord, ...]
    result: str
    source: str | None
    reason: str | None
    #: When the first move was made (epoch milliseconds, from the bridge's ``ts``), if known.
    first_move_ms: int | None = None
    #: When the game became a further game of its board in the round (epoch ns; 0 for a board's first game).
    added_ns: int = 0
    #: When the latest move was made (epoch milliseconds, from the bridge's ``ts``), if known.
    last_move_ms: int | None = None

    @property
    def ply(self) -> int:
        return len(self.moves)

    @property
    def forfeit(self) -> bool:
        """Whether the result is the arbiter's forfeit (a game not played)."""
        return self.source == "arbiter" and self.reason == "forfeit" and self.result != "*"


class GameMoves(Protocol):
    """What :func:`game_pgn` needs of a game (a :class:`LiveGame` or a :class:`GameSnapshot`)."""

    @property
    def start_fen(self) -> str: ...
    @property
    def chess960(self) -> bool: ...
    @property
    def moves(self) -> Sequence[PlyRecord]: ...


EMPTY_GAME = GameSnapshot(chess.STARTING_FEN, False, None, (), "*", None, None)


@dataclass
class LiveGame:
    """One board's current game as the broadcast shows it."""

    start_fen: str = chess.STARTING_FEN
    chess960: bool = False
    number: int | None = None
    moves: list[PlyRecord] = field(default_factory=list)
    results: ResultBook = field(default_factory=ResultBook)
    #: Bumped on every change: caches (PGN text, SVG) are keyed by it.
    version: int = 0
    #: Set when an event could not be applied (a gap, an illegal move): the game needs a resync.
    needs_resync: bool = False
    #: The ply a resync must reach (the ply of the event that could not be applied).
    resync_ply: int = 0
    #: Clock times (ms) of plies whose ``clock`` event came before their move.
    pending_clocks: dict[int, int] = field(default_factory=dict)
    #: The bridge session whose ``game_start`` began this game (None: not known). Another session's start
    #: with the same number comes from a bridge with a fresh journal (its games numbered from 1 again).
    session: str | None = None
    #: A game of a journal the board is no longer served from (its number means nothing any more).
    retired: bool = False
    #: The ply at which the bridge declared the result (a ``result`` record: resignation, time, agreement);
    #: while that result stands, no later ply is taken (putting the pieces back is not play).
    declared_ply: int | None = None
    #: When the first move was made (epoch ms, from its event's ``ts``).
    first_move_ms: int | None = None
    #: When the latest move was made (epoch ms, from its event's ``ts``; None: taken from the bridge's PGN).
    last_move_ms: int | None = None
    #: When the game was added to the round as a further game of its board (epoch ns; 0: the first game).
    added_ns: int = 0
    #: The latest move refused as illegal (ply, uci), until the broadcaster has told the arbiter.
    illegal: tuple[int, str] | None = None
    _position: chess.Board | None = field(default=None, repr=False, compare=False)

    _snapshot: GameSnapshot | None = field(default=None, repr=False, compare=False)
    _snapshot_version: int = field(default=-1, repr=False, compare=False)

    @property
    def ply(self) -> int:
        return len(self.moves)

    @property
    def has_result(self) -> bool:
        """Whether any source (arbiter, board, kings) gave this game a result."""
        return self.results.effective() != "*"

    def snapshot(self) -> GameSnapshot:
        """The game as it stands, immutable (cached until the next change)."""
        snap = self._snapshot
        if snap is None or self._snapshot_version != self.version:
            source = self.results.source()
            reason = {"board": self.results.board_reason, "kings": "kings in the centre",
                      "arbiter": self.results.arbiter_reason}.get(source or "")
            snap = GameSnapshot(self.start_fen, self.chess960, self.number, tuple(self.moves),
                                self.results.effective(), source, reason, self.first_move_ms, self.added_ns,
                                self.last_move_ms)
            self._snapshot, self._snapshot_version = snap, self.version
        return snap

    def board(self, upto: int | None = None) -> chess.Board:
        """A new board with the position after ``upto`` plies (all of them by default)."""
        if upto is None or upto >= self.ply:
            return self.position().copy()
        board = chess.Board(self.start_fen, chess960=self.chess960)
        for rec in self.moves[:upto]:
            board.push_uci(rec.uci)
        return board

    def position(self) -> chess.Board:
        """The current position, kept up to date move by move (do not change it: use :meth:`board`)."""
        if self._position is None:
            board = chess.Board(self.start_fen, chess960=self.chess960)
            for rec in self.moves:
                board.push_uci(rec.uci)
            self._position = board
        return self._position

    def _touch(self) -> bool:
        self.version += 1
        return True

    def _play(self, board: chess.Board, uci: str, clock_ms: Any) -> PlyRecord | None:
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            return None
        if not board.is_legal(move):
            return None
        clk = int(clock_ms) if isinstance(clock_ms, int | float) and not isinstance(clock_ms, bool) else None
        rec = PlyRecord(uci, board.san(move), clk)
        board.push(move)
        return rec

    def reset(self, fen: str, chess960: bool, number: int | None) -> None:
        self.start_fen = fen
        self.chess960 = chess960
        self.number = number
        self.moves = []
        self._position = None
        self.pending_clocks = {}
        self.first_move_ms = self.last_move_ms = None
        self.results.clear_game()
        self.needs_resync, self.resync_ply = False, 0
        self._touch()

    def apply(self, event: Mapping[str, Any]) -> bool:
        """Apply one engine event; return whether the game (moves or result) changed."""
        kind = event.get("type")
        game = event.get("game")
        if kind == "game_start":
            fen = str(event.get("fen") or chess.STARTING_FEN)
            if game is not None and game == self.number:
                return False  # a redelivered start of the game we already follow
            try:
                chess.Board(fen, chess960=bool(event.get("chess960")))
            except ValueError:
                log.warning("game_start with a bad FEN %r", fen)
                return False
            self.reset(fen, bool(event.get("chess960")), game if isinstance(game, int) else None)
            session = event.get("session")
            self.session = session if isinstance(session, str) else None
            return True
        if isinstance(game, int) and self.number is not None and game < self.number:
            return False  # a late event of an earlier game
        if (isinstance(game, int) and self.number is not None and game > self.number
                and kind in ("move", "move_amended", "takeback")):
            ply = event.get("ply")
            log.info("an event of game %s while following game %s: its start was missed", game, self.number)
            self.needs_resync = True
            self.resync_ply = max(self.resync_ply, ply if _is_ply(ply) else 0)
            return False
        if isinstance(game, int) and self.number is None:
            self.number = game
        if kind in ("move", "move_amended"):
            return self._apply_move(event, amend=kind == "move_amended")
        if kind == "clock":
            return self._apply_clock(event)
        if kind == "takeback":
            ply = event.get("ply")
            if not _is_ply(ply) or ply > self.ply:
                return False
            del self.moves[ply - 1:]
            self._position = None
            self.pending_clocks = {k: v for k, v in self.pending_clocks.items() if k < ply}
            self.results.set("board", None)
            self.results.set("kings", None)
            return self._touch()
        if kind == "game_resumed":  # the board's game end was withdrawn (a declared result stays)
            return self.results.set("board", None) and self._touch()
        if kind == "game_end":
            result = event.get("result")
            if result not in ("1-0", "0-1", "1/2-1/2", "*"):
                return False
            by = event.get("by")
            if isinstance(by, str) and by != "board" and result != "*":
                # declared through the bridge (a ``result`` record): the arbiter's, never withdrawn by the board
                # (``"by": "board"``: read from the pieces, a claim at the board's strength that it may withdraw)
                self.declared_ply = self.ply
                return self.results.set("arbiter", str(result)) and self._touch()
            return self.results.set("board", str(result), str(event.get("reason") or "")) and self._touch()
        return False

    @property
    def frozen_by_declaration(self) -> bool:
        """Whether a result declared through the bridge stands (later plies are not taken)."""
        return self.declared_ply is not None and self.results.arbiter is not None

    def _apply_clock(self, event: Mapping[str, Any]) -> bool:
        ply, remaining = event.get("ply"), event.get("remaining")
        if not _is_ply(ply) or type(remaining) is not int or ply > self.ply + 1:
            return False
        if ply > self.ply:
            self.pending_clocks[ply] = remaining
            return False
        rec = self.moves[ply - 1]
        if rec.clock_ms == remaining:
            return False
        self.moves[ply - 1] = PlyRecord(rec.uci, rec.san, remaining)
        return self._touch()

    def _apply_move(self, event: Mapping[str, Any], *, amend: bool) -> bool:
        ply, uci = event.get("ply"), event.get("uci")
        if not _is_ply(ply) or not isinstance(uci, str):
            return False
        if self.frozen_by_declaration and ply > (self.declared_ply or 0):
            log.info("ply %s after a declared result: not taken", ply)
            return False
        if ply > self.ply + 1:
            # Not used (a ply no further than one past the game): a lost event, or a wrong one. Either way the
            # next ply is missing, so the bridge's PGN is taken once it has it (a bogus ply cannot block that).
            log.info("ply %s arrived with only %s known: gap", ply, self.ply)
            self.needs_resync, self.resync_ply = True, max(self.resync_ply, self.ply + 1)
            return False
        if ply <= self.ply and not amend and self.moves[ply - 1].uci == uci:
            return False  # duplicate (QoS 1 redelivery, or a replay after a bridge restart)
        board = self.board(ply - 1)
        clock = event.get("clock_ms", self.pending_clocks.pop(ply, None))
        if clock is None and ply <= self.ply:
            clock = self.moves[ply - 1].clock_ms  # an amendment keeps the ply's clock time
        rec = self._play(board, uci, clock)
        if rec is None:
            log.warning("illegal move %s at ply %s (fen %s)", uci, ply, board.fen())
            self.needs_resync, self.resync_ply = True, max(self.resync_ply, ply)
            self.illegal = (ply, uci)
            return False
        if ply == 1:
            self.first_move_ms = _epoch_ms(event.get("ts"))
        self.last_move_ms = _epoch_ms(event.get("ts"))
        tail = self.moves[ply:]
        if ply <= self.ply and self.moves[ply - 1] == rec:
            return False
        self.moves[ply - 1:] = [rec]
        if amend:
            for old in tail:  # keep later plies while they stay legal
                again = self._play(board, old.uci, old.clock_ms)
                if again is None:
                    break
                self.moves.append(again)
        self._position = board
        if self.needs_resync and self.ply >= self.resync_ply:
            self.needs_resync, self.resync_ply = False, 0  # the missing ply came after all
        self.results.set("kings", None)  # play went on: the kings did not mean a result
        if self.results.board and not board.is_game_over():
            self.results.set("board", None)
        return self._touch()

    def set_result(self, source: str, result: str | None, reason: str | None = None) -> bool:
        """Record a result from ``source`` (see :mod:`.results`); return whether it changed. The arbiter
        clearing a declared result lets later plies in again (the bridge's PGN brings them)."""
        if source == "arbiter" and result in (None, "*") and self.declared_ply is not None:
            self.declared_ply = None
            self.needs_resync, self.resync_ply = True, self.ply
        return self.results.set(source, result, reason) and self._touch()

    def adopt(self, pgn_game: chess.pgn.Game, number: int | None = None) -> bool:
        """Take the moves of a game read from PGN (the bridge's retained PGN, for a resync)."""
        board = pgn_game.board()
        same = board.fen() == chess.Board(self.start_fen, chess960=self.chess960).fen()
        moves: list[PlyRecord] = []
        for i, node in enumerate(pgn_game.mainline()):
            clk = node.clock()
            uci = node.move.uci()
            ms = None if clk is None else round(clk * 1000)
            same = same and i < len(self.moves) and self.moves[i].uci == uci
            if ms is None and same:
                ms = self.moves[i].clock_ms  # the same ply as here: its clock time, known here, is kept
            moves.append(PlyRecord(uci, board.san(node.move), ms))
            board.push(node.move)
        if self.needs_resync and len(moves) < self.resync_ply:
            return False  # an older PGN than the event that showed the gap: wait for the next one
        if self.frozen_by_declaration and len(moves) > (self.declared_ply or 0):
            return False  # play shown after a declared result: the arbiter decides (see set_result)
        start = pgn_game.board()
        if (start.fen() == chess.Board(self.start_fen, chess960=self.chess960).fen()
                and moves == self.moves and not self.needs_resync):
            return False
        self.start_fen = start.fen()
        self.chess960 = start.chess960
        if number is not None:
            self.number = number
        self.moves = moves
        self._position = None
        self.needs_resync, self.resync_ply = False, 0
        result = pgn_game.headers.get("Result", "*")
        if result in ("1-0", "0-1", "1/2-1/2") and self.results.board != result:
            self.results.set("board", result, "pgn")  # (the reason the game_end gave is kept when it came)
        return self._touch()


def _epoch_ms(ts: Any) -> int | None:
    """Epoch milliseconds of an ISO 8601 time (the bridge's ``ts``), or None."""
    if not isinstance(ts, str) or len(ts) > 40:
        return None
    try:
        when = dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def _is_ply(value: Any) -> TypeGuard[int]:
    return type(value) is int and value >= 1


def pgn_headers(tournament: Tournament, pairing: Pairing, result: str, *, round_number: int | None = None,
                date: dt.date | None = None, entry: int = 1) -> dict[str, str]:
    """The headers of one board's game, in the order broadcasts expect (``entry`` > 1: a further game
    on the board in the same round, allowed by the arbiter, is round ``r.b.entry``)."""
    rnd = tournament.round if round_number is None else round_number
    day = date if date is not None else tournament.round_date(rnd)
    headers = {
        "Event": tournament.event,
        "Site": tournament.site,
        "Date": day.strftime("%Y.%m.%d"),
        "Round": f"{rnd}.{pairing.board}" + (f".{entry}" if entry > 1 else ""),
        "White": pairing.white.name,
        "Black": pairing.black.name,
        "Result": result,
    }
    for side, player in (("White", pairing.white), ("Black", pairing.black)):
        if player.fide_id is not None:
            headers[f"{side}FideId"] = str(player.fide_id)
        if player.elo is not None:
            headers[f"{side}Elo"] = str(player.elo)
        if player.title:
            headers[f"{side}Title"] = player.title
    headers["TimeControl"] = tournament.time_control
    headers["Board"] = str(pairing.board)
    return headers


def _clock(ms: int) -> str:
    seconds = max(0, ms) // 1000
    return f"[%clk {seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}]"


def _header_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def game_pgn(game: GameMoves, headers: Mapping[str, str], columns: int = 80) -> str:
    """One game as PGN text: headers, moves with ``{ [%clk h:mm:ss] }`` comments, the result.

    The SAN of every ply was computed by python-chess when the move was checked, so the text is built
    directly from it (one move re-renders one game in microseconds, whatever its length).
    """
    tags = dict(headers)
    start = chess.Board(game.start_fen, chess960=game.chess960)
    if game.start_fen != chess.STARTING_FEN or game.chess960:
        tags["SetUp"] = "1"
        tags["FEN"] = start.fen()
        if game.chess960:
            tags["Variant"] = "Chess960"
    result = tags.get("Result", "*")
    if result == DOUBLE_FORFEIT:  # no PGN result says it: "*", and the Termination tag
        tags["Result"] = result = "*"
        tags["Termination"] = "double forfeit"
    lines = [f'[{key} "{_header_value(value)}"]' for key, value in tags.items()]
    tokens: list[str] = []
    number, white = start.fullmove_number, start.turn == chess.WHITE
    after_comment = True
    for rec in game.moves:
        if white:
            tokens.append(f"{number}.")
        elif after_comment:
            tokens.append(f"{number}...")
        tokens.append(rec.san)
        after_comment = rec.clock_ms is not None
        if after_comment:
            tokens.append("{ " + _clock(rec.clock_ms or 0) + " }")
        if not white:
            number += 1
        white = not white
    tokens.append(result)
    movetext: list[str] = []
    line = ""
    for token in tokens:
        if line and len(line) + 1 + len(token) > columns:
            movetext.append(line)
            line = token
        else:
            line = f"{line} {token}" if line else token
    movetext.append(line)
    return "\n".join(lines) + "\n\n" + "\n".join(movetext)


class RoundPgn:
    """A round's multi-game PGN, rebuilt from per-game caches so one move re-renders one game."""

    def __init__(self, tournament: Tournament, round_number: int | None = None,
                 date: dt.date | None = None) -> None:
        self.tournament = tournament
        self.round_number = tournament.round if round_number is None else round_number
        self.date = date
        self._cache: dict[tuple[int, int], tuple[GameSnapshot, str]] = {}
        self._pairings = tournament.rounds[self.round_number].pairings
        self._boards: dict[int, tuple[object, list[str]]] = {}

    def game_text(self, pairing: Pairing, game: GameSnapshot | LiveGame, entry: int = 1) -> str:
        """One game's PGN (``entry``: its place among the board's games of the round, from 1)."""
        snap = game if type(game) is GameSnapshot else game.snapshot()  # type: ignore[union-attr]
        key = (pairing.board, entry)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is snap:
            return hit[1]
        headers = pgn_headers(self.tournament, pairing, snap.result, round_number=self.round_number,
                              date=self.date, entry=entry)
        text = game_pgn(snap, headers)
        self._cache[key] = (snap, text)
        return text

    def render(self, games: Mapping[int, LiveGame | GameSnapshot | Sequence[GameSnapshot]],
               boards: range | None = None) -> str:
        """Every pairing of the round in board order (``boards``: those board numbers only), each board's
        games in order; a board not started yet is a game with no moves. A board given the same tuple of
        snapshots as last time is not looked at again."""
        parts: list[str] = []
        seen = self._boards
        for pairing in self._pairings:
            board = pairing.board
            if boards is not None and board not in boards:
                continue
            found = games.get(board)
            hit = seen.get(board)
            if hit is not None and hit[0] is found:  # the same (immutable) tuple of snapshots
                parts.extend(hit[1])
                continue
            entries: Sequence[GameSnapshot | LiveGame]
            if found is None:
                entries = (EMPTY_GAME,)
            elif isinstance(found, LiveGame | GameSnapshot):
                entries = (found,)
            else:
                entries = found or (EMPTY_GAME,)
            texts = [self.game_text(pairing, game, k) for k, game in enumerate(entries, 1)]
            if type(found) is tuple:
                seen[board] = (found, texts)
            parts.extend(texts)
        return "\n\n".join(parts) + "\n" if parts else ""


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
