"""Round results for pairing programs: a CSV of every game, and FIDE TRF-style player lines.

Both are built from the round's games (:class:`~touchmove.broadcast.live_pgn.GameSnapshot` per board, in
the order they were played), whatever the source of the result (arbiter, board, kings).

CSV columns (one row per game, header first)::

    round,board,game,white,white_fide_id,black,black_fide_id,result,source,reason

``game`` is the game's place on the board in that round (1, or 2 for a replayed game or an armageddon
the arbiter allowed); ``result`` is ``1-0``, ``0-1``, ``1/2-1/2``, ``*`` (not finished) or ``1-0f``/``0-1f``
(a forfeit: the arbiter's, reason ``forfeit``); ``source`` is ``arbiter``, ``board`` or ``kings`` (empty while
unfinished).

TRF (FIDE's Tournament Report File): :func:`results_trf`, in TRF-16 or TRF-2026 (:mod:`.trf` has the
columns and the codes), with the ``[report]`` table's records a rating report needs. When a board has several
games in a round, the last finished one counts.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Callable, Mapping, Sequence

from touchmove.broadcast.live_pgn import GameSnapshot
from touchmove.broadcast.tournament import Player, Tournament
from touchmove.broadcast.trf import TrfEntry, TrfHeader, game_codes, write_trf

CSV_COLUMNS = ("round", "board", "game", "white", "white_fide_id", "black", "black_fide_id", "result",
               "source", "reason")

RoundGames = Mapping[int, Sequence[GameSnapshot]]


def results_csv(tournament: Tournament, rounds: Mapping[int, RoundGames]) -> str:
    """Every game of the given rounds (round number -> board -> games) as CSV."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for number in sorted(rounds):
        games = rounds[number]
        for pairing in tournament.rounds[number].pairings:
            for k, game in enumerate(games.get(pairing.board) or (), 1):
                finished = game.result != "*"
                writer.writerow([
                    number, pairing.board, k, pairing.white.name, pairing.white.fide_id or "",
                    pairing.black.name, pairing.black.fide_id or "", game.result + ("f" if game.forfeit else ""),
                    (game.source or "") if finished else "", (game.reason or "") if finished else "",
                ])
    return out.getvalue()


def _key(player: Player) -> tuple[str, str]:
    return ("fide", str(player.fide_id)) if player.fide_id else ("name", player.name.casefold())


def _counted(games: Sequence[GameSnapshot]) -> GameSnapshot | None:
    """The game of a board that counts: the last finished one, else the last one (None: none)."""
    finished = [g for g in games if g.result != "*"]
    return finished[-1] if finished else (games[-1] if games else None)


def trf_header(tournament: Tournament) -> TrfHeader:
    """The TRF tournament records from the file (its ``[report]`` table, event, site, time control)."""
    r = tournament.report
    return TrfHeader(tournament.event, tournament.site, r.federation, r.chief_arbiter, r.deputy_arbiters,
                     r.type, tournament.time_control if tournament.time_control != "?" else "", r.rounds,
                     r.allotted_time)


def results_trf(tournament: Tournament, rounds: Mapping[int, RoundGames],
                round_date: Callable[[int], dt.date], *, variant: str = "16") -> str:
    """The rounds' results as a TRF (``variant`` ``16`` or ``2026``; see :mod:`.trf`). Codes: ``1`` ``=``
    ``0`` for a game played (or a result the file gives), ``W`` ``D`` ``L`` for one followed here that lasted
    less than one move, ``+``/``-`` for a forfeit (the file's or the arbiter's ``1-0f``), a blank result while a game is
    unfinished, ``0000 - H`` (``F``, ``U``, ``Z``) for a bye of the round's ``byes``, ``0000 - Z`` for a player
    not paired in a round."""
    entries: dict[tuple[str, str], TrfEntry] = {}

    def entry(p: Player) -> TrfEntry:
        key = _key(p)
        if key not in entries:
            entries[key] = TrfEntry(key, p.name, p.sex, p.title, p.elo, p.federation, p.fide_id, p.birth)
        return entries[key]

    for number in sorted(rounds):
        games = rounds[number]
        for pairing in tournament.rounds[number].pairings:
            w, b = entry(pairing.white), entry(pairing.black)
            game = _counted(games.get(pairing.board) or ())
            result = game.result if game is not None else (pairing.result or "*")
            followed = game is not None and (game.number is not None or game.ply > 0)
            plies = game.ply if followed and game is not None else None
            forfeit = pairing.forfeit if game is None else (game.forfeit or (
                pairing.forfeit and game.source == "arbiter" and game.result == pairing.result and not game.ply))
            white, black = game_codes(result, plies, forfeit)
            w.games[number] = (b.key, "w", white)
            b.games[number] = (w.key, "b", black)
        for player, kind in tournament.rounds[number].byes:
            entry(player).games[number] = (None, "-", kind)
    return write_trf(trf_header(tournament), entries.values(), {n: round_date(n) for n in sorted(rounds)},
                     variant=variant)
