"""Play the engine did not see made: plies recovered after lost changes, an arbiter's resync, a declared result.

The engine (:mod:`touchmove.rules.engine`) reads moves from the changes a board reports. When changes were lost
(a cable pulled, a USB hub reset), the next snapshot shows what they do not explain: :class:`UnseenPlay` looks for
the legal plies played meanwhile (:mod:`touchmove.rules.recovery`) and makes them, or, when several positions
fit, follows each as a hypothesis (a copy of the engine) until the board shows which one was played. An
arbiter's ``resync`` gives those plies by hand; a ``result`` record declares a game end the board cannot show.

Each engine owns one :class:`UnseenPlay`; its state is :attr:`UnseenPlay.lost` (changes were lost and not yet
explained), :attr:`UnseenPlay.hypotheses` (the lines followed while several fit) and its :class:`Role`. What it
keeps per game (:class:`~touchmove.rules.game_line.UnseenNotes`, :class:`Declared`) lives in the engine's game
line, so that a takeback or a new game resets it with the rest.

This module does not import the engine: it sees an engine through :class:`EngineInterface`, read-only views of
the occupancy, position and ply and the named operations the engine offers for play it did not see (fork and
adopt a hypothesis, mark the board lost, make recovered plies, take back). On an operator's or the bridge's record
(a resync, a declared result, the plies published) it changes nothing itself: it returns what to do, a
:class:`UnseenDecision` (:class:`ApplyResync`, :class:`DeclareEnd`, :class:`ResumeGame`, :class:`ReorderPlies`)
the engine applies, or the events of a rejection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, Self

import chess

from touchmove.records import Lift, Place, Published, Record, Result, Resync, Setup, TakebackRequest
from touchmove.rules.events import Alert, AlertCode, DeclaredEnd, Event, ResultRejected, ResyncRejected
from touchmove.rules.footprints import Position
from touchmove.rules.game_line import Declared, GameRecovery, Recovered, RecoveredAlert, SearchedAgain
from touchmove.rules.identity import PieceChange, only_lifted, shown_by, shown_in_turn
from touchmove.rules.phases import CLEARED_SQUARES, Phase, Sync
from touchmove.rules.readings import GameView
from touchmove.rules.recovery import (
    MAX_PLIES,
    Explanation,
    completed_first,
    explanations,
    in_landing_order,
    in_published_order,
    landed_out_of_order,
    likeliest_first,
    order_disagreement,
    position_key,
    unaccounted,
    under_way_before_its_turn,
    unreported,
)

__all__ = [
    "DECLARED_ARTICLES", "AdoptLine", "ApplyResync", "ContinueBlind", "DeclareEnd", "Declared", "EngineInterface",
    "FollowBoard", "GameRecovery", "Hypothesis", "LostWindow", "Recovered", "ReorderPlies", "ResumeGame", "Role",
    "SearchedAgain", "UnseenDecision", "UnseenPlay", "declared_as", "declared_event",
]

#: After a ply made when its settle time ran out is searched again with its piece slid on further (changes were
#: lost), how many plies every line must see made, none contradicted, before the ply as made is taken.
UNTOLD_PLIES = 2

#: The FIDE Laws article of each usual declared end (a ``result`` record's reason); other reasons cite none.
DECLARED_ARTICLES = {"resignation": "5.1.2", "time": "6.9", "agreement": "5.2.3"}


class UnseenDecision:
    """What unseen play decided the engine does to its game (applied by the engine, as the decisions of
    :mod:`touchmove.rules.at_rest` are)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ApplyResync(UnseenDecision):
    """An arbiter's resync, checked: make ``moves`` from the last sure position (the arbiter vouches for it)."""

    moves: tuple[chess.Move, ...]


@dataclass(frozen=True, slots=True)
class ReorderPlies(UnseenDecision):
    """Plies recovered unseen, put in the order the bridge had published: ``order`` from ply ``first`` on, and the
    ``changes_lost`` alert that named them told again (at ply ``ply``, with ``detail``: it supersedes)."""

    first: int
    order: tuple[chess.Move, ...]
    ply: int
    detail: dict[str, object]


@dataclass(frozen=True, slots=True)
class ResumeGame(UnseenDecision):
    """The game end announced is withdrawn (a board's claim the pieces show no more): play goes on."""


@dataclass(frozen=True, slots=True)
class DeclareEnd(UnseenDecision):
    """A declared result accepted (``record``): the move the board shows is made first, and if that move ended
    the game on the board the record is asked about again (:meth:`UnseenPlay.declare`); else the game ends as
    :func:`declared_as` says, with ``declared_end`` (:func:`declared_event`)."""

    record: Result


@dataclass(frozen=True, slots=True)
class AdoptLine(UnseenDecision):
    """The board showed which lost plies were played: the engine goes on as ``line`` (the hypothesis, a fork of
    it), its state now the engine's, with ``events`` (the ``changes_lost`` alert naming the lines rejected, then
    the line's own)."""

    line: EngineInterface
    events: list[Event]


@dataclass(frozen=True, slots=True)
class ContinueBlind(UnseenDecision):
    """Every hypothesis dropped (or an operator acts): play on from the last sure position with the board of
    ``line`` (one of them), what it shows off the position lifted unseen; ``judge``: read what it shows at once
    (else the engine reads the operator's record itself next)."""

    line: EngineInterface
    judge: bool


@dataclass(frozen=True, slots=True)
class FollowBoard(UnseenDecision):
    """The hypotheses took a record or the time: the engine shows the occupancy of ``shown`` (one of them) and
    time ``t``, then ``then``: the line the board left adopted, every line dropped, or nothing (they go on)."""

    shown: EngineInterface
    t: int
    then: AdoptLine | ContinueBlind | None = None


class Role(Enum):
    """What an engine is to the board."""

    BOARD = "board"  # the board's own engine
    HYPOTHESIS = "hypothesis"  # follows one hypothesis of another: ruled out when the board contradicts it


class EngineInterface(GameView, Protocol):
    """What unseen play sees of an engine (its :class:`~touchmove.rules.readings.GameView` and the ply and time
    below), the steps it gives a hypothesis (an engine), and the operations the search for lost plies still calls
    (fork, plies recovered or taken back, the board lost); :class:`touchmove.rules.engine.Engine` offers it. The
    rest of what unseen play decides it returns (:class:`UnseenDecision`)."""

    def pieces_placed_at(self) -> dict[chess.Square, int]: ...
    def pieces_changes(self) -> Sequence[PieceChange]: ...
    @property
    def plies(self) -> int: ...
    @property
    def ply_number(self) -> int: ...
    @property
    def game_number(self) -> int: ...
    @property
    def received(self) -> int: ...

    def feed(self, record: Record) -> list[Event]: ...
    def advance(self, t: int) -> list[Event]: ...
    def finish(self) -> list[Event]: ...
    def next_deadline(self) -> int | None: ...
    def decide_by(self, t: int) -> list[Event]: ...
    def apply_change(self, t: int, sq: chess.Square, occupied: bool) -> list[Event]: ...
    def fork(self) -> Self: ...
    def contradicted(self) -> bool: ...
    def rule_out(self) -> None: ...
    def mark_lost(self) -> None: ...
    def read_moves(self) -> None: ...
    def make_recovered(self, t: int, moves: Sequence[chess.Move], shown_at: Sequence[int] | None = None,
                       ) -> list[Event]: ...
    def take_back_to(self, t: int, keep: int) -> list[Event]: ...
    def alert(self, t: int, code: AlertCode, article: str, ply: int, detail: dict[str, object]) -> Alert: ...


@dataclass
class Hypothesis:
    """One way the lost plies may have gone: the game played on from there, with the events it gave so far."""

    sans: list[str]
    engine: EngineInterface
    events: list[Event]
    #: The line that keeps a ply made when its settle time ran out (its piece slid on further in the others):
    #: taken once every line still open has seen :data:`UNTOLD_PLIES` plies made with no change telling them
    #: apart. ``plies``: the game's plies when the line was opened.
    preferred: bool = False
    plies: int = 0


@dataclass
class LostWindow:
    """Lost changes: when the board went blind, when that was seen, and the occupancy last searched."""

    since: int
    seen: int
    searched: chess.Bitboard


class UnseenPlay:
    """An engine's plies not seen made: recovery after lost changes, hypotheses, resync, declared results.

    The methods take the engine they belong to (an engine that follows a hypothesis is a copy, with its own).
    """

    def __init__(self, role: Role = Role.BOARD) -> None:
        self.role = role
        self.lost: LostWindow | None = None  # changes were lost: recovery under way
        #: The lines followed while several positions fit the lost changes (only while ``lost``); the engine gives
        #: them every record and the time until the board shows which one was played.
        self.hypotheses: list[Hypothesis] | None = None

    def end_lost(self) -> None:
        """The board shows the game again (or an arbiter resynced it): nothing lost, nothing followed."""
        self.lost = None
        self.hypotheses = None

    def still_blind(self, occ: chess.Bitboard) -> bool:
        """Return whether the board is blind and shows what was not searched yet (more of the lost plies)."""
        return self.lost is not None and self.lost.searched != occ

    # ----------------------------------------------------------------------------------------------------------
    # the engine's API while hypotheses are followed

    def feed(self, engine: EngineInterface, record: Record) -> list[Event] | FollowBoard | ContinueBlind:
        """Give a record to the hypotheses (:class:`FollowBoard`), or reject it; an operator's record drops them
        (:class:`ContinueBlind`, not judged: the engine then reads the record itself), and so does a board's lift or
        place that dropped every line before one took it (a queen put on e4 while each line waited for a capture
        on d5: the board it goes on blind with would miss the queen)."""
        if isinstance(record, Resync):
            plies = self.resync_plies(engine, record)
            if isinstance(plies, str):  # rejected: the hypotheses stay
                return [ResyncRejected(engine.game_number, max(record.t, engine.now), plies, list(record.moves),
                                       record.fen)]
        elif isinstance(record, Result):
            return [ResultRejected(engine.game_number, max(record.t, engine.now),
                                   "changes were lost and several positions fit: resync the game first",
                                   record.result, record.reason)]
        elif not isinstance(record, Setup | TakebackRequest):
            if isinstance(record, Published):
                self.published(engine, record, amend=False)    # kept if every line is dropped
            followed = self.feed_hypotheses(engine, lambda child: child.feed(record), record.t)
            blind = followed.then
            if (isinstance(blind, ContinueBlind) and isinstance(record, Lift | Place)
                    and bool(blind.line.occupancy >> record.sq & 1) != isinstance(record, Place)):
                # every line dropped before it took the change that dropped them: the engine reads it itself
                return ContinueBlind(blind.line, judge=False)
            return followed
        return self.drop_hypotheses(engine, search_again=False)  # the operator says what happened

    def next_deadline(self) -> int | None:
        """Return the earliest deadline of the hypotheses."""
        assert self.hypotheses is not None
        times = [d for h in self.hypotheses if (d := h.engine.next_deadline()) is not None]
        return min(times) if times else None

    # ----------------------------------------------------------------------------------------------------------
    # recovery

    def changes_lost(self, engine: EngineInterface, t: int, since: int | None = None, quiet: bool = False,
                     first: tuple[chess.Move, ...] | None = None, again: bool = False) -> list[Event]:
        """The board shows what the changes seen do not explain: find the plies played meanwhile.

        ``since``: the device time of the last record before the changes were lost (by default, the last record
        seen); ``quiet``: if nothing explains the board, say nothing and change nothing (it may be no loss);
        ``first``: the plies the lost ones begin with (a search again, :class:`Recovered`); ``again``: a search
        again (:meth:`recover_again`), which on a board that names its pieces also weighs the order of their lifts
        (no move under way begun before its turn, :func:`~touchmove.rules.recovery.under_way_before_its_turn`).
        """
        if self.role is Role.HYPOTHESIS:
            # A hypothesis the board does not follow is ruled out, not recovered in turn.
            engine.rule_out()
            return []
        game = engine.current_game
        keep = len(game.moves)  # the plies of the last sure position
        taken_back = False
        reported = _reported_squares(engine, keep - 1)
        # a board that names its pieces tells a capture made from its piece still in the hand: both are searched
        pieces = engine.pieces_shown
        named = pieces is not None
        if first is not None:
            found = explanations(engine.position.board, engine.occupancy, max_plies=MAX_PLIES + 1, first=first,
                                 reported=reported, under_way_too=named, pieces=pieces)
        else:
            found = explanations(engine.position.board, engine.occupancy, reported=reported, under_way_too=named,
                                 pieces=pieces)
            made = _made_unseen_at_rest(engine)
            if made is not None:
                # The last ply was made when its settle time ran out, and no record came in by then: the board may
                # have gone blind with its piece still sliding on. The ply stands if it explains the board, but
                # its piece slid on further in as many plies is followed too (the board decides, else the ply as
                # made is taken); if it does not, the piece slid on further is searched for. When another line
                # fits, the ply is taken back, and a search again (the board contradicting the plies recovered)
                # begins before it; else nothing changes.
                before = game.board(keep - 1)
                slid = _slid_on(before, made)
                further: list[Explanation] | None = None
                if slid and found:
                    plies = 1 + min(len(e.moves) + e.in_progress for e in found)
                    # its piece slid on explains the board in fewer plies: that line (the shortest wins)
                    further = explanations(before, engine.occupancy, max_plies=plies - 1, first=slid, pieces=pieces)
                    if not further:
                        further = explanations(before, engine.occupancy, min_plies=plies, max_plies=plies,
                                               first=(made, *slid), pieces=pieces)
                        if further and (all(e.moves[0] == made for e in further)
                                        or len({position_key(e.board) for e in further}) == 1):
                            further = None  # no other line, or the same position either way: the ply as made
                elif slid:
                    further = explanations(before, engine.occupancy, max_plies=MAX_PLIES + 1, first=slid,
                                           pieces=pieces)
                if further:
                    found, taken_back, keep, first = further, True, keep - 1, (made, *slid)
        if pieces is not None and found:
            # A board that names its pieces: only the plies that leave them where it shows them explain it, and of
            # those the ones that account best for the pieces it put down since the plies searched began (a ply
            # taken back for the search, its too).
            start = game.board(keep) if taken_back else engine.position.board
            since_keep = _told_since(engine, keep)
            # a first search goes on from the engine's own position, which an earlier misreading may have left
            # with a piece where none stands: a move under way is how it goes on from there, whatever its order
            weighed = since_keep if again else ()
            found = _shown_by_pieces(found, start, pieces, engine.occupancy, weighed) or _longer_shown_by_pieces(
                found, start, engine.occupancy, pieces, MAX_PLIES + 1 if first is not None else MAX_PLIES, first,
                reported, weighed)
            if found and since_keep:
                found = _best_told(found, start, engine.occupancy, pieces, since_keep, first, reported, bool(weighed))
        if quiet and not found:
            return []
        engine.read_moves()  # many squares off after lost changes: plies lost, not the board cleared
        if self.lost is None:
            self.lost = LostWindow(since=engine.now if since is None else since, seen=t, searched=engine.occupancy)
        blind = self.lost
        blind.searched = engine.occupancy
        detail: dict[str, object] = {"blind_ms": blind.seen - blind.since}
        if not found:
            alerted = engine.sync is Sync.LOST
            engine.mark_lost()
            if alerted:
                return []
            gave_up = found is None      # the search's bound was reached: not the same as nothing found
            detail.update(candidates=[], search="gave up" if gave_up else "exhausted", note=(
                "the search for the plies played meanwhile gave up (too many positions)" if gave_up else
                "no legal sequence of plies leads to what the board shows") + ": resync the game (the moves "
                "since the last sure position, or a FEN)")
            return [engine.alert(t, "changes_lost", "7.4", engine.ply_number, detail)]
        out = engine.take_back_to(t, keep) if taken_back else []
        if engine.line.unseen.recovery is None:
            engine.line.unseen.recovery = Recovered(keep, blind.since, first)
        found = likeliest_first(found, game.moves[-1].to_square if game.moves else None)
        placed_at = engine.pieces_placed_at() if pieces is not None else None
        changes = _told_since(engine, engine.plies) if placed_at is not None else []
        if placed_at is not None:
            # The board told when each piece was lifted and put down: the plies in the order it reported them.
            begun = engine.position.board
            # the plies it reported first (Kd1 Ke2 shown beat Bh7 Bd3 never shown), then their order
            found.sort(key=lambda e: (unreported(begun, e.moves, changes), order_disagreement(begun, e.moves, changes),
                                      landed_out_of_order(e.moves, placed_at)))
        if taken_back and first is not None:
            found.sort(key=lambda e: e.moves[0] != first[0])  # the ply as made first
        # plies in the order their pieces landed, unless the ply as made comes first
        by_landing = placed_at if not (taken_back and first is not None) else None
        groups: dict[str, list[Explanation]] = {}
        for found_one in found:
            groups.setdefault(position_key(found_one.board), []).append(found_one)
        start = engine.position.board
        published = _published_after(engine)
        if len(groups) == 1:
            # The board cannot tell orders of the same plies apart: the one the bridge had published, else the usual.
            chosen, told = _published_order(start, found[0].moves, published)
            if by_landing is not None and not told:
                chosen = in_landing_order(start, chosen, by_landing, changes)
            if pieces is not None and not taken_back:
                shown_at = shown_in_turn(start, chosen, [c for c in engine.pieces_changes() if c.plies >= keep],
                                         pieces)
                if shown_at is not None:
                    # Every ply's position was shown, in turn: nothing was lost, the plies were read in an order
                    # no reading followed (a bullet recapture landing as its victim was pushed aside). Made as
                    # seen, with no alert.
                    return [*out, *engine.make_recovered(t, chosen, shown_at)]
            detail["plies"] = _sans(start, chosen)
            others = [e for e in found if e.moves != chosen]
            if others:
                detail["other_orders"] = [e.sans(start) for e in others[:4]]
                if told:
                    detail["order"] = "published"
            alert = engine.alert(t, "changes_lost", "7.4", engine.ply_number, detail)
            engine.line.unseen.recovered_plies += len(chosen)
            engine.line.unseen.recovered_alert = RecoveredAlert(engine.plies + 1, list(chosen), alert.ply,
                                                                alert.detail)
            return [*out, alert, *engine.make_recovered(t, chosen)]
        # Several positions fit: follow each until the board shows which (the first later change only one allows).
        hypotheses: list[Hypothesis] = []
        for group in groups.values():
            moves, told = _published_order(start, group[0].moves, published)
            if by_landing is not None and not told:
                moves = in_landing_order(start, moves, by_landing, changes)
            sans = _sans(start, moves)
            child = engine.fork()
            child.line.unseen.recovered_plies += len(moves)
            child.line.unseen.recovered_alert = RecoveredAlert(child.plies + 1, list(moves), engine.ply_number, {
                "blind_ms": detail["blind_ms"], "plies": sans})
            events = child.make_recovered(t, moves)
            preferred = taken_back and first is not None and moves[0] == first[0] and not any(
                h.preferred for h in hypotheses)
            hypotheses.append(Hypothesis(sans, child, events, preferred, child.plies))
        engine.mark_lost()
        self.hypotheses = hypotheses
        detail["candidates"] = [h.sans for h in hypotheses]
        return [*out, engine.alert(t, "changes_lost", "7.4", engine.ply_number, detail)]

    def recover_again(self, engine: EngineInterface, t: int) -> list[Event]:
        """The board contradicts plies recovered a moment ago: search again from the position before them."""
        recovered = engine.line.unseen.recovery
        game = engine.current_game
        if not isinstance(recovered, Recovered) or self.role is Role.HYPOTHESIS:
            return []
        played = len(game.moves) - recovered.keep
        if played > MAX_PLIES + 2:
            engine.line.unseen.recovery = None
            return []
        before = game.board(recovered.keep)
        made = tuple(game.moves[recovered.keep:])
        max_plies = min(played + 3, MAX_PLIES + 2)
        reported = _reported_squares(engine, recovered.keep)
        pieces = engine.pieces_shown
        found = explanations(before, engine.occupancy, max_plies=max_plies, first=recovered.first, reported=reported,
                             under_way_too=pieces is not None, pieces=pieces)
        if pieces is not None and found:
            # Plies that only the occupancy allows are no reason to take back plies the pieces showed made.
            told = _told_since(engine, recovered.keep)
            found = _shown_by_pieces(found, before, pieces, engine.occupancy, told) or _longer_shown_by_pieces(
                found, before, engine.occupancy, pieces, max_plies, recovered.first, reported, told)
            if found and _lifts_from_plies_told(engine, recovered.keep, before, made, found, pieces, told):
                return []
        if not found:
            return []
        self.lost = LostWindow(since=recovered.since, seen=t, searched=-1)
        self.hypotheses = None
        if played and all(e.moves[:played] == made for e in found):
            # every line the board allows goes on from the plies recovered: they stand (no takeback of plies that
            # come back the same), and the plies after them are searched for
            out = self.changes_lost(engine, t, again=True)
        else:
            out = engine.take_back_to(t, recovered.keep) if played else []
            out += self.changes_lost(engine, t, first=recovered.first, again=True)
        engine.line.unseen.recovery = SearchedAgain()
        return out

    def published(self, engine: EngineInterface, record: Published, *, amend: bool = True) -> ReorderPlies | None:
        """The current game's plies as the bridge had published them before it restarted: kept as evidence of the
        order of plies recovered unseen (:func:`_published_order`). Plies recovered already in another order that
        reaches the same position are put in the published one (``amend``, :class:`ReorderPlies`): ``move_amended``
        from the first that differs to the game's last ply, and the ``changes_lost`` alert that named them again,
        with ``order`` ``published`` and ``amended`` (it supersedes). Plies that are not the game's line are no
        evidence."""
        game = engine.game
        if game is None:
            return None
        board = game.board(0)
        moves: list[chess.Move] = []
        for text in record.moves:
            move = _parse_move(board, text)
            if move is None:
                return None
            moves.append(move)
            board.push(move)
        engine.line.unseen.published = tuple(moves)
        noted = engine.line.unseen.recovered_alert
        if not amend or noted is None:
            return None
        before = noted.first - 1
        played = game.moves
        if played[before:before + len(noted.moves)] != noted.moves or moves[:before] != played[:before]:
            return None     # the recovered plies were taken back, or the bridge published another line
        start = game.board(before)
        order = in_published_order(start, noted.moves, moves[before:])
        if order is None:
            return None
        detail = noted.reorder(list(order), _sans(start, order))
        return ReorderPlies(noted.first, order, noted.ply, detail)

    # ----------------------------------------------------------------------------------------------------------
    # hypotheses

    def feed_hypotheses(self, engine: EngineInterface, step: Callable[[EngineInterface], list[Event]],
                        t: int) -> FollowBoard:
        """Give a record (or the time) to every hypothesis; the one the board leaves is adopted."""
        hypotheses = self.hypotheses
        assert hypotheses is not None
        for hypothesis in hypotheses:
            hypothesis.events += step(hypothesis.engine)
        shown = hypotheses[0].engine
        alive = [h for h in hypotheses if not h.engine.contradicted()]
        preferred = next((h for h in alive if h.preferred), None) if len(alive) > 1 else None
        if preferred is not None and all(h.engine.plies >= h.plies + UNTOLD_PLIES for h in alive):
            alive = [preferred]  # the board never told them apart: the ply as it was made stands
        if len({position_key(h.engine.position.board) for h in alive}) == 1 and len(alive) > 1:
            # The lines have met (a move under way in one was made in another): the same game from here on.
            alive = [min(alive, key=lambda h: h.engine.plies)]
        if len(alive) == 1:
            return FollowBoard(shown, t, self.adopt(engine, alive[0], [h for h in hypotheses if h is not alive[0]]))
        if not alive:
            return FollowBoard(shown, t, self.drop_hypotheses(engine, search_again=True))
        self.hypotheses = alive
        return FollowBoard(shown, t)

    def adopt(self, engine: EngineInterface, chosen: Hypothesis, rejected: list[Hypothesis]) -> AdoptLine:
        """The board showed which lost plies were played: go on from there, with the events of that line."""
        blind = self.lost
        assert blind is not None
        child = chosen.engine
        noted = child.line.unseen.recovered_alert   # the plies as the line has them (a recovered one amended)
        alert = engine.alert(child.now, "changes_lost", "7.4", engine.ply_number, {
            "blind_ms": blind.seen - blind.since, "plies": chosen.sans if noted is None else noted.detail["plies"],
            "rejected": [h.sans for h in rejected],
        })
        if noted is not None:
            # the line's note, the engine's once it is adopted
            child.line.unseen.recovered_alert = RecoveredAlert(noted.first, noted.moves, alert.ply, alert.detail)
        return AdoptLine(child, [alert, *chosen.events])

    def drop_hypotheses(self, engine: EngineInterface, search_again: bool) -> ContinueBlind:
        """Every hypothesis is contradicted (or an operator acts): play on from the last sure position, blind,
        with the board of one of them; ``search_again``: what it shows is searched (else it is taken as searched,
        and the next correction is the arbiter's)."""
        hypotheses, blind = self.hypotheses, self.lost
        assert hypotheses is not None and blind is not None
        self.hypotheses = None
        if search_again:
            blind.searched = -1
            return ContinueBlind(hypotheses[0].engine, judge=True)
        blind.searched = hypotheses[0].engine.occupancy    # (the board's, once it goes on blind with it)
        engine.line.unseen.recovery = SearchedAgain()
        return ContinueBlind(hypotheses[0].engine, judge=False)

    # ----------------------------------------------------------------------------------------------------------
    # an arbiter's resync

    def resync_plies(self, engine: EngineInterface, record: Resync) -> list[chess.Move] | str:
        """Return the plies an arbiter's resync gives from the last sure position, or why it cannot be applied."""
        game = engine.game
        if game is None or engine.phase is Phase.NEW or (engine.phase is Phase.OVER and not game.moves):
            return "no game on this board"
        sure = engine.position
        board = sure.board.copy(stack=False)
        moves: list[chess.Move] = []
        if record.fen is not None:
            try:
                wanted = chess.Board(record.fen, chess960=board.chess960)
            except ValueError as exc:
                return f"invalid FEN: {exc}"
            if position_key(wanted) != position_key(board):
                found = [e for e in explanations(board, wanted.occupied) or []
                         if position_key(e.board) == position_key(wanted) and not e.in_progress]
                if not found:
                    return (f"the FEN is not reached from the last sure position ({sure.fen()}) by a few "
                            "legal plies: give the moves instead")
                moves = list(found[0].moves)
                board = found[0].board.copy(stack=False)
        else:
            for number, text in enumerate(record.moves, start=1):
                move = _parse_move(board, text)
                if move is None:
                    return (f"move {number} ({text!r}) is not legal in {board.fen()} (the moves count from the last "
                            f"sure position, {sure.fen()})")
                moves.append(move)
                board.push(move)
        final = Position(board)
        occ = engine.occupancy
        if final.occ != occ and not final.continuable(occ):
            extra = occ & ~final.occ
            missing = final.occ & ~occ
            return ("the moves do not lead to what the board shows: "
                    f"extra {[chess.square_name(sq) for sq in chess.scan_forward(extra)]}, "
                    f"missing {[chess.square_name(sq) for sq in chess.scan_forward(missing)]}")
        return moves

    def resync(self, engine: EngineInterface, t: int, record: Resync) -> list[Event] | ApplyResync:
        """An arbiter's resync: the plies since the last sure position (or the position now) given by hand, to
        apply, or its rejection (the engine has taken the changes held by the chatter filter as certain first)."""
        moves = self.resync_plies(engine, record)
        if isinstance(moves, str):
            return [ResyncRejected(engine.game_number, t, moves, list(record.moves), record.fen)]
        return ApplyResync(tuple(moves))

    # ----------------------------------------------------------------------------------------------------------
    # declared results

    def declared_end(self, engine: EngineInterface) -> bool:
        """Return whether the current game is over by a declared result (not by what the board showed)."""
        game = engine.game
        return game is not None and game.result != "*" and engine.line.declared is not None

    def declare(self, engine: EngineInterface, t: int, record: Result) -> list[Event] | UnseenDecision:
        """A declared result (resignation, time, agreement): the current game ends as the board cannot show
        (:class:`DeclareEnd`; the engine has taken the changes held by the chatter filter as certain first).

        Rejected when no game is on, or when the board already ended the game with another result; a result
        declared before is replaced. A move the board then shows made withdraws it (``game_resumed``).
        """
        game = engine.game
        if record.by == "board":
            claimed = self.board_claim(engine, t, record)
            if claimed is not None:
                return claimed
        if game is None or engine.phase is Phase.NEW or (engine.phase is Phase.OVER and game.result == "*"):
            return [ResultRejected(engine.game_number, t, "no game on this board", record.result, record.reason)]
        if game.result != "*" and engine.line.declared is None:
            if game.result == record.result:
                return []  # the board saw it already (its reason stands)
            return [ResultRejected(game.number, t, f"the game already ended on the board: {game.result} "
                                   f"({game.end_reason}); take back or resync first", record.result,
                                   record.reason)]
        if (game.result, game.end_reason) == (record.result, record.reason):
            return []  # declared again
        return DeclareEnd(record)

    def board_claim(self, engine: EngineInterface, t: int, record: Result) -> list[Event] | ResumeGame | None:
        """A result read from the pieces (``"by": "board"``): a claim at the board's strength. Return its events
        when it is settled here (a withdrawal; a claim the game's end already says, or one an arbiter's declared
        result outranks), else None (declared as :meth:`declare` does, withdrawn by the board later).

        ``*`` (the pieces show it no more): a claim standing is withdrawn (``game_resumed``) once the board shows
        the game's position again, at once when it does now (:class:`ResumeGame`)."""
        game = engine.game
        declared = engine.line.declared
        board_claim = declared in (Declared.BOARD_SHOWN, Declared.BOARD_GONE) and self.declared_end(engine)
        if record.result == "*":
            if not board_claim:
                return []
            engine.line.declared = Declared.BOARD_GONE
            return ResumeGame() if engine.occupancy == engine.position.occ else []
        if game is None or game.result == "*":
            return None
        if board_claim:
            engine.line.declared = Declared.BOARD_SHOWN
            return [] if game.result == record.result else None
        if declared in (Declared.READ_ON, Declared.CLEARED):
            if game.result == record.result:
                return []
            return [ResultRejected(game.number, t, f"the arbiter declared {game.result} ({game.end_reason})",
                                   record.result, record.reason)]
        return None


def declared_as(view: GameView, record: Result) -> Declared:
    """Return how the game ends by the declared result ``record`` (:class:`DeclareEnd`, once the move the board
    showed is made): a board being cleared ends it for good; a board's claim, or an arbiter's declaration, leaves
    moves read (one made withdraws it)."""
    cleared = (view.occupancy ^ view.position.occ).bit_count() >= CLEARED_SQUARES
    if record.by == "board":
        return Declared.CLEARED if cleared else Declared.BOARD_SHOWN
    return Declared.CLEARED if cleared else Declared.READ_ON


def declared_event(game: int, t: int, record: Result) -> DeclaredEnd:
    """Return the ``declared_end`` event of the declared result ``record`` ending game number ``game``."""
    article = DECLARED_ARTICLES.get(record.reason.lower(), "")
    return DeclaredEnd(game, t, record.result, record.reason, article, record.by or "arbiter")


def _published_after(engine: EngineInterface) -> tuple[chess.Move, ...]:
    """Return the plies the bridge had published after the current game's plies (none when what it published is
    another line: :attr:`~touchmove.rules.game_line.UnseenNotes.published`)."""
    published = engine.line.unseen.published
    played = engine.current_game.moves
    if len(published) <= len(played) or list(published[:len(played)]) != played:
        return ()
    return published[len(played):]


def _published_order(start: chess.Board, moves: tuple[chess.Move, ...],
                     published: tuple[chess.Move, ...]) -> tuple[tuple[chess.Move, ...], bool]:
    """Return plies recovered from ``start`` in the order the bridge had published (``published``, from ``start``),
    when that order reaches the position they do (:func:`~touchmove.rules.recovery.in_published_order`), else as
    they are; and whether the published plies agree with the plies returned."""
    order = in_published_order(start, moves, published)
    if order is not None:
        return order, True
    count = min(len(moves), len(published))
    return moves, count > 0 and moves[:count] == published[:count]


def _sans(start: chess.Board, moves: Sequence[chess.Move]) -> list[str]:
    """Return ``moves`` in SAN, played from ``start``."""
    board = start.copy(stack=False)
    return [board.san_and_push(move) for move in moves]


def _shown_by_pieces(found: list[Explanation], start: chess.Board, pieces: dict[chess.Square, str],
                     occupancy: chess.Bitboard | None = None,
                     changes: Sequence[tuple[int, chess.Square, str | None]] = ()) -> list[Explanation]:
    """Return the explanations (found by occupancy from ``start``) that leave the board's named ``pieces`` where
    it shows them, a promotion made with the piece it shows (:func:`~touchmove.rules.identity.shown_by`); where
    the pieces allow a capture made and the same plies with its piece still in the hand, the capture made. With
    the ``occupancy`` searched and the pieces' ``changes`` since ``start``: not a move under way that the
    reports show begun before its mover's ply before it
    (:func:`~touchmove.rules.recovery.under_way_before_its_turn`)."""
    out = []
    for explanation in found:
        if occupancy is not None and under_way_before_its_turn(start, explanation, occupancy, changes):
            continue
        moves = shown_by(explanation.moves, start, explanation.in_progress, pieces)
        if moves is None:
            continue
        if moves != explanation.moves:
            board = start.copy(stack=False)
            for move in moves:
                board.push(move)
            explanation = Explanation(moves, board, explanation.in_progress)
        out.append(explanation)
    return completed_first(out)


def _longer_shown_by_pieces(found: list[Explanation], start: chess.Board, occupancy: chess.Bitboard,
                            pieces: dict[chess.Square, str], max_plies: int, first: tuple[chess.Move, ...] | None,
                            reported: tuple[chess.Bitboard, chess.Bitboard] | None,
                            changes: Sequence[tuple[int, chess.Square, str | None]] = ()) -> list[Explanation] | None:
    """Return the shortest sequences longer than ``found`` (the shortest by occupancy from ``start``, none of
    which leave the named ``pieces`` where the board shows them) that do, up to ``max_plies``; [] if none do,
    None if the search gave up. Two plies may leave the squares as one did (Qc1 Qxc1 as Qxc1): only the pieces
    tell them apart. ``changes``: as :func:`_shown_by_pieces` takes them."""
    length = max(len(e.moves) + e.in_progress for e in found)
    while length < max_plies:
        longer = explanations(start, occupancy, max_plies=max_plies, first=first, min_plies=length + 1,
                              reported=reported, under_way_too=True, pieces=pieces)
        if not longer:
            return longer
        shown = _shown_by_pieces(longer, start, pieces, occupancy, changes)
        if shown:
            return shown
        length = max(len(e.moves) + e.in_progress for e in longer)
    return []


def _best_told(found: list[Explanation], start: chess.Board, occupancy: chess.Bitboard,
               pieces: dict[chess.Square, str], changes: list[tuple[int, chess.Square, str | None]],
               first: tuple[chess.Move, ...] | None,
               reported: tuple[chess.Bitboard, chess.Bitboard] | None, weigh_order: bool = False) -> list[Explanation]:
    """Return those of ``found`` that account for the most of the pieces the board reported put down meanwhile
    (:func:`~touchmove.rules.recovery.unaccounted`: Nd2 with Bxd2 under way, not Ne3 with Bxe3, when the board
    named the knight on d2), or the sequences one ply longer that leave the pieces where the board shows them
    and account for more: c4 with Rxb8 under way leaves the squares and pieces that Rxh8 Rxh8 c4 leaves, but not
    the two rooks the board named on h8 one after the other. ``weigh_order``: the longer sequences as a search
    again keeps them (:func:`_shown_by_pieces` with the changes)."""
    told = [(unaccounted(start, e, changes), e) for e in found]
    missed = min(n for n, _ in told)
    if missed:
        length = max(len(e.moves) + e.in_progress for e in found) + 1
        longer = explanations(start, occupancy, max_plies=length, first=first, min_plies=length, reported=reported,
                              under_way_too=True, pieces=pieces)
        kept = _shown_by_pieces(longer or [], start, pieces, occupancy, changes if weigh_order else ())
        longer_told = [(unaccounted(start, e, changes), e) for e in kept]
        best = min((n for n, _ in longer_told), default=missed)
        if best < missed:
            told, missed = longer_told, best
    return [e for n, e in told if n == missed]


def _lifts_from_plies_told(engine: EngineInterface, keep: int, before: chess.Board, made: tuple[chess.Move, ...],
                           found: list[Explanation], pieces: dict[chess.Square, str],
                           told: list[tuple[int, chess.Square, str | None]]) -> bool:
    """Return whether the board shows the game position with pieces only lifted (hands of either side: the next
    placement decides), every line ``found`` takes back a ply made as the board showed it (after the plies last
    recovered), and the plies ``made`` since the game had ``keep`` plies (``before``) account for more of the
    pieces the board told put down than every one of them: no reason to take them back. A DGT's move memory
    replayed after a lost link: Bf4 shown, Black's e7 bishop lifted, then the f4 bishop (Bxd6 coming, Bd6 merged
    away in the memory); Bc5 with ...Bxc5 under way leaves the same squares empty, but never the bishop on f4
    the board named. Plies that were themselves recovered are searched again (pieces only lifted may be what
    shows them misread)."""
    position = engine.position
    if engine.occupancy & ~position.occ or not only_lifted(position.board, pieces):
        return False
    noted = engine.line.unseen.recovered_alert
    recovered_to = keep if noted is None else max(keep, noted.first - 1 + len(noted.moves))
    shown = made[recovered_to - keep:]      # the plies made as the board showed them
    if not shown or any(set(shown) <= set(e.moves) for e in found):
        return False        # a line keeps them: it reorders or replaces recovered plies only
    plies_made = Explanation(made, position.board)
    return unaccounted(before, plies_made, told) < min(unaccounted(before, e, told) for e in found)


def _told_since(engine: EngineInterface, plies: int) -> list[tuple[int, chess.Square, str | None]]:
    """Return the changes a board that names its pieces told since the game had ``plies`` plies: (time, square, the
    piece put down or None for a lift), oldest first."""
    return [(c.t, c.sq, c.piece) for c in engine.pieces_changes() if c.plies >= plies]


def _reported_squares(engine: EngineInterface, plies: int) -> tuple[chess.Bitboard, chess.Bitboard] | None:
    """Return the squares a board that names its pieces reported lifted from and put down on since the game had
    ``plies`` plies (the search tries plies between them first), None for other boards (they report none)."""
    changes = engine.pieces_changes()
    if not changes:
        return None
    lifted = placed = 0
    for change in changes:
        if change.plies >= plies:
            if change.piece is None:
                lifted |= chess.BB_SQUARES[change.sq]
            else:
                placed |= chess.BB_SQUARES[change.sq]
    return lifted, placed


def _made_unseen_at_rest(engine: EngineInterface) -> chess.Move | None:
    """Return the last ply if it was made when its settle time ran out with no record come in by then (the board
    may have been blind already: its rest was not seen), else None."""
    settled = engine.line.unseen.settled_by_time
    game = engine.current_game
    if settled is None or settled[0] != len(game.moves) or engine.received >= settled[1]:
        return None
    return game.moves[-1]


def _slid_on(board: chess.Board, move: chess.Move) -> list[chess.Move]:
    """Return the legal moves of ``board`` that slide ``move``'s piece on beyond its square (the piece sensed
    there on its way)."""
    passed = chess.BB_SQUARES[move.to_square]
    return [other for other in board.generate_legal_moves(chess.BB_SQUARES[move.from_square])
            if other != move and other.promotion in (None, chess.QUEEN)
            and chess.between(other.from_square, other.to_square) & passed]


def _parse_move(board: chess.Board, text: str) -> chess.Move | None:
    """Return the legal move ``text`` (SAN or UCI) in ``board``, or None."""
    try:
        return board.parse_san(text)
    except ValueError:
        pass
    try:
        move = chess.Move.from_uci(text)
    except ValueError:
        return None
    return move if board.is_legal(move) else None
