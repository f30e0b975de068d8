"""The games of a board in a round, kept across restarts, and the delay line of the public outputs.

A board plays one game after another (the bridge numbers them); a round holds the board's game for that
round. :class:`BoardGames` decides which of the bridge's games are the round's:

- the first game the board starts (numbered above ``floor``, the last game of an earlier round) is the
  round's game (its *entry*);
- once that game has a result (board, kings, arbiter) or moves, it is **frozen**: a new game started on
  the board (players clearing it and setting it up again) does not replace it. The new game is *held*:
  followed (the arbiter sees it) but not in the round, until the arbiter allows it, either as a further
  game of the board (``next``: a replayed game, an armageddon) or in place of the entry (``replace``: a
  game restarted with the colours swapped). The arbiter may also allow it before it starts;
- a new game replaces an entry that has neither moves nor result (nothing is lost);
- **a round starts clean**: when a round opens here for the first time (``opening.pending``), a game the
  bridge shows without its start having been seen here (its retained PGN or state, a move past the first
  ply, a ``game_end``) may be a game of an earlier round or of another event on the same boards (every
  round uses the same board ids; the broker keeps each board's last game). When it has moves or a result it
  is *held* as a game from before the round (``opening.held``): followed, shown to the arbiter, never in an
  output, until the arbiter allows it (``allow``: it becomes the round's game) or a new game starts on the
  board (the round's game: the held one is dropped). A game shown with neither moves nor result is the
  round's (nothing of it is from before), and so is a game numbered above ``opening.game`` (the game the
  bridge's first state showed after the round opened: a later one started since, even when it is first
  seen from the retained PGN after an outage).

Events are routed by their game number, so a late event of a frozen game still reaches it (a
``game_resumed`` withdrawing its board result, a clock press).

:func:`save_round` / :func:`load_round` keep every board's games (moves, clocks, results of every source)
in ``round-<n>-state.json``: a restarted broadcaster writes the same PGN as before.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import chess
import chess.pgn

from touchmove.broadcast.delay_journal import DelayJournal
from touchmove.broadcast.live_pgn import GameSnapshot, LiveGame, PlyRecord, write_atomically
from touchmove.broadcast.results import RESULTS, SOURCES

STATE_VERSION = 1


class Allow(StrEnum):
    """What the arbiter allowed for the board's next game."""

    NEXT = "next"  #: a further game of the board in this round
    REPLACE = "replace"  #: the new game replaces the round's game


@dataclass
class Opening:
    """The board when the round opened here for the first time (see the module: a round starts clean)."""

    #: No game of the board seen starting since: a played game shown now may be from before the round.
    pending: bool = False
    #: The board's held game was on the board before the round opened here (another round's or event's?).
    held: bool = False
    #: The bridge's game number in the first state seen after the round opened here: a game numbered above
    #: it started since (the round's, also when it is first seen from the retained PGN after an outage).
    game: int | None = None


@dataclass
class BoardGames:
    """One board's games in a round: the entries (in order), and a game started after them, held."""

    entries: list[LiveGame] = field(default_factory=lambda: [LiveGame()])
    held: LiveGame | None = None
    allow: Allow | None = None
    #: The bridge's games numbered up to this one belong to earlier rounds.
    floor: int | None = None
    #: The bridge session that started the floor's game (None: not known).
    floor_session: str | None = None
    #: How the round began on this board when it opened here (a round starts clean: see the module).
    opening: Opening = field(default_factory=Opening)
    _snaps: tuple[tuple[int, int, int], tuple[GameSnapshot, ...]] | None = field(default=None, repr=False,
                                                                              compare=False)

    @property
    def current(self) -> LiveGame:
        """The round's latest game on this board."""
        return self.entries[-1]

    def live(self) -> LiveGame:
        """The game being played on the board (the held one, if any)."""
        return self.held if self.held is not None else self.current

    def game(self, number: int | None) -> LiveGame | None:
        """The game with the bridge's number ``number`` (None: the live one)."""
        if number is None:
            return self.live()
        if self.held is not None and self.held.number == number and not self.held.retired:
            return self.held
        for game in reversed(self.entries):
            if game.number == number and not game.retired:
                return game
        return None

    def _fresh_journal(self, event: Mapping[str, Any], number: int | None) -> bool:
        """Whether a ``game_start`` comes from a bridge with a fresh journal: another session starting a
        game numbered as one of ours (a redelivery, or a restart on the same journal, repeats the session)."""
        session = event.get("session")
        if not isinstance(session, str) or number is None:
            return False
        known = self.game(number)
        if known is not None:
            return known.session is not None and known.session != session
        return self._old(number) and self.floor_session is not None and self.floor_session != session

    def _retire(self) -> None:
        """The board is served from another journal: the games kept so far are no longer addressed by number
        (none is lost or replaced: the new game is held like any game after a finished one)."""
        for game in (*self.entries, self.held):
            if game is not None:
                game.retired = True
        self.floor = self.floor_session = None

    def snapshots(self) -> tuple[GameSnapshot, ...]:
        """The round's games of this board as they stand (the held game is not the round's); the same
        tuple until one of them changes (renders are cached by it)."""
        entries = self.entries
        key = (len(entries), id(entries[-1]), sum(g.version for g in entries))
        if self._snaps is None or self._snaps[0] != key:
            self._snaps = (key, tuple(game.snapshot() for game in entries))
        return self._snaps[1]

    def durable_key(self) -> tuple[Any, ...]:
        """What must be on disk at once when it changes: results and their reasons (the results export says
        them), the games of the round and the held one, the permission, the moves of games no longer played (the
        bridge's retained PGN holds only the live game's)."""
        live = self.live()
        held = self.held
        return (
            self.allow, None if held is None else (id(held), held.results.arbiter, held.results.board,
                                                   held.results.board_reason, held.results.kings),
            tuple((id(g), g.number, g.results.arbiter, g.results.arbiter_reason, g.results.board,
                   g.results.board_reason, g.results.kings, None if g is live else g.version) for g in self.entries),
        )

    def _old(self, number: int | None) -> bool:
        return number is not None and self.floor is not None and number <= self.floor

    def apply(self, event: Mapping[str, Any]) -> bool:
        """Apply one checked engine event; return whether a game of the board changed."""
        number = event.get("game") if type(event.get("game")) is int else None
        if event.get("type") == "game_start" and self._fresh_journal(event, number):
            self._retire()
        if self._old(number):
            return False  # a game of an earlier round
        if event.get("type") == "game_start":
            if (self.opening.held and self.held is not None and self.held.number == number
                    and self.held.session is None):
                # a game from before the round, known only from retained messages, and a start with its number:
                # a bridge numbering afresh (another journal), not that game's start again
                self.held, self.opening.held = None, False
            if number is not None and self.game(number) is not None:
                return False  # a redelivered start
            return self.start(event)
        target = self.game(number)
        if target is None:
            live = self.live()
            if live.number is None and self._from_before(event):
                target = self._hold_before()
            elif live.number is None:
                target = live  # followed from its events: the number is learnt from them
                if live is self.current:
                    self.opening.pending = False  # its first move, seen here: the round's game
            elif number is not None and number > live.number:
                # a game whose start was missed: it starts here (from the standard position until the
                # bridge's PGN tells otherwise), and its event shows what is missing
                self.start({"type": "game_start", "game": number})
                target = self.game(number)
                if target is None:
                    return False
                target.apply(event)
                return True
            else:
                return False  # an event of an earlier game no longer followed
        return target.apply(event)

    def note_state(self, number: int) -> None:
        """The bridge's state says game ``number`` is on the board: the first one after the round opened
        here is the game there was then (see :attr:`Opening.game`)."""
        if self.opening.pending and self.opening.game is None:
            self.opening.game = number

    def _maybe_before(self, number: int | None) -> bool:
        """Whether game ``number``, not seen starting, may have been on the board when the round opened."""
        return number is None or self.opening.game is None or number <= self.opening.game

    def _from_before(self, event: Mapping[str, Any]) -> bool:
        """Whether an event of a game not seen starting may be of a game played before the round opened
        here (anything but the game's first move, while the round has no game of the board yet)."""
        if not self.opening.pending or self.held is not None or self.current.ply:
            return False
        number = event.get("game") if type(event.get("game")) is int else None
        return self._maybe_before(number) and not (event.get("type") == "move" and event.get("ply") == 1)

    def _hold_before(self) -> LiveGame:
        """Hold a game shown on the board that may be from before the round (see the module)."""
        self.held, self.opening.held = LiveGame(), True
        return self.held

    def start(self, event: Mapping[str, Any]) -> bool:
        """A new game on the board: the round's game, a further entry, or held (see the module)."""
        new = LiveGame()
        if not new.apply(event):
            return False
        self.opening.pending = False  # a game started since the round opened here: the round's own
        if self.opening.held:  # the game from before the round is over; it never entered the round
            self.held, self.opening.held = None, False
        current = self.current
        if current.ply == 0 and not current.has_result and self.held is None and not current.retired:
            new.results.arbiter = current.results.arbiter  # a result entered before the game started
            self.entries[-1] = new
        elif self.allow is Allow.NEXT:
            new.added_ns = time.time_ns()
            self.entries.append(new)
            self.allow = None
        elif self.allow is Allow.REPLACE:
            self.entries[-1] = new
            self.allow = None
        else:
            self.held = new
            return True
        self.held = None
        return True

    def permit(self, allow: Allow | None) -> str:
        """The arbiter's permission for the next game (None withdraws it); return what was done."""
        if allow is None:
            self.allow = None
            return "no further game allowed"
        if self.held is None:
            self.allow = allow
            return f"the next game started on the board will be {self._what(allow)}"
        held, self.held, self.allow = self.held, None, None
        if self.opening.held and self.current.ply == 0:
            allow = Allow.REPLACE  # a game from before the round taken in: the round's game
        self.opening.held = self.opening.pending = False
        if allow is Allow.NEXT:
            held.added_ns = time.time_ns()
            self.entries.append(held)
        else:
            self.entries[-1] = held
        return f"the game being played is now {self._what(allow)}"

    def _what(self, allow: Allow) -> str:
        return f"game {len(self.entries) + 1} of the board" if allow is Allow.NEXT else "the round's game"

    def adopt(self, pgn_game: chess.pgn.Game, number: int | None) -> bool:
        """Take a game from the bridge's retained PGN (game ``number``, None if not known yet)."""
        if self._old(number):
            return False
        target = self.game(number)
        current = self.current
        if (self.opening.pending and self.held is None and current.number is None and not current.ply
                and target in (None, current) and self._maybe_before(number) and _played(pgn_game)):
            target = self._hold_before()  # a played game shown when the round opened here
        if target is None:
            live = self.live()
            if live.number is None:
                target = live
            elif number is not None and number > live.number:
                board = pgn_game.board()
                self.start({"type": "game_start", "game": number, "fen": board.fen(),
                            "chess960": board.chess960})
                target = self.game(number)
            if target is None:
                return False
        if number is None and target.has_result and not target.needs_resync:
            return False  # a finished game is not replaced by a PGN of a game not known yet
        if target is current:
            self.opening.pending = False  # the round's game is known (nothing of it is from before)
        return target.adopt(pgn_game, number)

    def to_json(self) -> dict[str, Any]:
        return {
            "entries": [game_to_json(g) for g in self.entries],
            "held": game_to_json(self.held) if self.held is not None else None,
            "allow": self.allow.value if self.allow is not None else None,
            "floor": self.floor, "floor_session": self.floor_session,
            "before_round": self.opening.pending, "held_before": self.opening.held,
            "opening_game": self.opening.game,
        }

    @classmethod
    def from_json(cls, data: Any) -> BoardGames:
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list) or not data["entries"]:
            raise ValueError("a board needs a list of games")
        allow = data.get("allow")
        floor, floor_session = data.get("floor"), data.get("floor_session")
        return cls(
            entries=[game_from_json(g) for g in data["entries"]],
            held=game_from_json(data["held"]) if data.get("held") is not None else None,
            allow=Allow(allow) if allow is not None else None,
            floor=floor if type(floor) is int else None,
            floor_session=floor_session if isinstance(floor_session, str) else None,
            opening=Opening(pending=data.get("before_round") is True,
                            held=data.get("held_before") is True and data.get("held") is not None,
                            game=data["opening_game"] if type(data.get("opening_game")) is int else None),
        )


def _played(pgn_game: chess.pgn.Game) -> bool:
    """Whether a PGN's game has moves or a result (else nothing of it can be from before the round)."""
    return pgn_game.next() is not None or pgn_game.headers.get("Result", "*") != "*"


def game_to_json(game: LiveGame) -> dict[str, Any]:
    """One game as stored: start, number, moves with their clock times (ms), the result of each source."""
    r = game.results
    return {
        "number": game.number, "fen": game.start_fen, "chess960": game.chess960,
        "moves": [[m.uci, m.clock_ms] for m in game.moves],
        "results": {"arbiter": r.arbiter, "board": r.board, "kings": r.kings, "board_reason": r.board_reason,
                    "arbiter_reason": r.arbiter_reason},
        "session": game.session, "retired": game.retired, "declared_ply": game.declared_ply,
        "first_move_ms": game.first_move_ms, "added_ns": game.added_ns, "last_move_ms": game.last_move_ms,
    }


def game_from_json(data: Any) -> LiveGame:
    """A stored game back, every move checked again (ValueError if something does not fit)."""
    if not isinstance(data, dict):
        raise ValueError("a game must be an object")
    number = data.get("number")
    game = LiveGame(start_fen=str(data.get("fen") or chess.STARTING_FEN), chess960=data.get("chess960") is True,
                    number=number if type(number) is int else None)
    board = chess.Board(game.start_fen, chess960=game.chess960)
    for item in data.get("moves") or []:
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
            raise ValueError("a move must be [uci, clock_ms]")
        move = chess.Move.from_uci(item[0])
        if not board.is_legal(move):
            raise ValueError(f"illegal stored move {item[0]}")
        clk = item[1] if type(item[1]) is int else None
        game.moves.append(PlyRecord(item[0], board.san(move), clk))
        board.push(move)
    results = data.get("results") or {}
    for source in SOURCES:
        value = results.get(source)
        if value is not None and value in RESULTS:
            reason = results.get(f"{source}_reason") if source in ("board", "arbiter") else None
            game.results.set(source, value, reason if isinstance(reason, str) else None)
    session, declared = data.get("session"), data.get("declared_ply")
    game.session = session if isinstance(session, str) else None
    game.retired = data.get("retired") is True
    first, added = data.get("first_move_ms"), data.get("added_ns")
    game.first_move_ms = first if type(first) is int else None
    last = data.get("last_move_ms")
    game.last_move_ms = last if type(last) is int else None
    game.added_ns = added if type(added) is int and added >= 0 else 0
    game.declared_ply = declared if type(declared) is int and 0 <= declared <= game.ply else None
    game.version = 1
    return game


@dataclass
class RoundRecord:
    """What is kept of a round on disk: its boards' games and the day it started."""

    number: int
    started: dt.date
    boards: dict[int, BoardGames]
    #: What the public saw of each board (with a delay): per game, its number, plies and result.
    public: dict[int, list[tuple[int | None, int, str]]] = field(default_factory=dict)
    #: The tournament's event: a state is never taken for another event's.
    event: str | None = None

    def public_snapshots(self, board: int) -> tuple[GameSnapshot, ...] | None:
        """The board's games as the public saw them when saved (None if not kept)."""
        seen = self.public.get(board)
        games = self.boards.get(board)
        if seen is None or games is None:
            return None
        out: list[GameSnapshot] = []
        for (number, ply, result), game in zip(seen, games.entries, strict=False):
            snap = game.snapshot()
            same = result == snap.result
            out.append(GameSnapshot(snap.start_fen, snap.chess960, number, snap.moves[:ply], result,
                                    snap.source if same else None, snap.reason if same else None,
                                    snap.first_move_ms if ply else None, snap.added_ns,
                                    snap.last_move_ms if ply == snap.ply else None))
        return tuple(out)


def state_path(output_dir: Path, number: int) -> Path:
    return output_dir / f"round-{number}-state.json"


def save_round(output_dir: Path, record: RoundRecord) -> None:
    """Write the round's state atomically (readers see the old file or the new one)."""
    data = {
        "version": STATE_VERSION, "event": record.event, "round": record.number,
        "started": record.started.isoformat(),
        "boards": {str(n): games.to_json() for n, games in sorted(record.boards.items())},
        "public": {str(n): [list(item) for item in seen] for n, seen in sorted(record.public.items())},
    }
    write_atomically(state_path(output_dir, record.number), json.dumps(data, separators=(",", ":")) + "\n")


def load_round(output_dir: Path, number: int, event: str | None = None) -> RoundRecord | None:
    """The round's saved state, or None when there is none; ValueError (one line) for a file that cannot
    be read, or that is another event's (``event`` given)."""
    path = state_path(output_dir, number)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot be read: {exc}") from exc
    if not isinstance(data, dict) or data.get("round") != number or not isinstance(data.get("boards"), dict):
        raise ValueError(f"{path}: not the state of round {number}")
    saved_event = data.get("event")
    if event is not None and isinstance(saved_event, str) and saved_event != event:
        raise ValueError(f"{path} is the state of {saved_event!r}, not {event!r}: move it away or use another "
                         "output_dir")
    try:
        started = dt.date.fromisoformat(str(data.get("started")))
    except ValueError:
        started = dt.datetime.now(dt.UTC).date()
    boards: dict[int, BoardGames] = {}
    for key, raw in data["boards"].items():
        if not str(key).isdigit():
            continue
        try:
            boards[int(key)] = BoardGames.from_json(raw)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            raise ValueError(f"{path}: board {key}: {exc}") from None
    public: dict[int, list[tuple[int | None, int, str]]] = {}
    raw_public = data.get("public")
    if not isinstance(raw_public, dict):
        raw_public = {}
    for key, seen in raw_public.items():
        if str(key).isdigit() and isinstance(seen, list):
            public[int(key)] = [(item[0] if type(item[0]) is int else None, int(item[1]), str(item[2]))
                                for item in seen if isinstance(item, list) and len(item) == 3
                                and type(item[1]) is int and isinstance(item[2], str) and item[2] in RESULTS]
    return RoundRecord(number, started, boards, public, saved_event if isinstance(saved_event, str) else None)


class DelayLine:
    """The public view of a round's boards: each board's games as they stood ``delay`` seconds ago.

    Every change is recorded with its time on a monotonic clock (a step of the wall clock moves nothing);
    what is older than the delay is dropped, except the latest such state (the one shown now). Memory: the
    changes within the delay. With a :attr:`journal`, each change is also written to disk at once
    (:mod:`.delay_journal`: a restart after ``kill -9`` serves what was public before it).
    """

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._lines: dict[int, deque[tuple[float, tuple[GameSnapshot, ...]]]] = {}
        #: Where each change is written as it is recorded (None: kept in memory only).
        self.journal: DelayJournal | None = None
        #: Per board, the time of the change shown last (a newer one shown is noted in the journal).
        self._shown: dict[int, float] = {}

    def record(self, board: int, now: float, games: tuple[GameSnapshot, ...]) -> None:
        line = self._lines.setdefault(board, deque())
        if line and line[-1][1] == games:
            return
        line.append((now, games))
        if self.delay <= 0:
            while len(line) > 1:
                line.popleft()
        elif self.journal is not None:
            self.journal.append(board, now, games)

    def restore(self, board: int, entries: list[tuple[float, tuple[GameSnapshot, ...]]]) -> None:
        """Put back a board's changes read from the journal (in order, times on the monotonic clock)."""
        self._lines[board] = deque(entries)

    def boards(self) -> list[int]:
        """The boards with a change recorded."""
        return list(self._lines)

    def has(self, board: int) -> bool:
        """Whether any change of ``board`` is recorded."""
        return bool(self._lines.get(board))

    def needed(self, now: float) -> dict[int, list[tuple[float, tuple[GameSnapshot, ...]]]]:
        """Each board's changes the view still needs at ``now``: the one shown, and those not yet due."""
        for board in self._lines:
            self.public(board, now)  # drops what no longer counts
        return {board: list(line) for board, line in self._lines.items()}

    def public(self, board: int, now: float) -> tuple[GameSnapshot, ...]:
        """The board's games as the public sees them at ``now`` (empty before anything is due)."""
        line = self._lines.get(board)
        if not line:
            return ()
        cutoff = now - self.delay
        while len(line) > 1 and line[1][0] <= cutoff:
            line.popleft()
        if line[0][0] > cutoff:
            return ()
        if self.journal is not None and self._shown.get(board) != line[0][0]:
            self._shown[board] = line[0][0]
            self.journal.seen(now)
        return line[0][1]

    def next_due(self, now: float) -> float | None:
        """When the public view changes next (None: not before a new change)."""
        due = math.inf
        for line in self._lines.values():
            for t, _ in line:
                if t + self.delay > now:
                    due = min(due, t + self.delay)
                    break
        return None if due == math.inf else due
