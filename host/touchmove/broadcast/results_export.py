"""Round results for pairing programs: a CSV of every game, and FIDE TRF-style player lines.

Both are built from the round's games (:class:`~touchmove.broadcast.live_pgn.GameSnapshot` per board, in
the order they were played), whatever the source of the result (arbiter, board, kings).

CSV columns (one row per game, header first)::

    round,board,game,white,white_fide_id,black,black_fide_id,result,source,reason

``game`` is the game's place on the board in that round (1, or 2 for a replayed game or an armageddon
the arbiter allowed); ``result`` is ``1-0``, ``0-1``, ``1/2-1/2`` or ``*`` (not finished); ``source`` is
``arbiter``, ``board`` or ``kings`` (empty while unfinished).

TRF (FIDE's Tournament Report File, TRF16 columns): ``012`` event, ``022`` site, ``042``/``052`` first and
last round dates, then one ``001`` line per player of any round: start rank (players ordered by rating,
then name), title, name, rating, federation, FIDE id, points, rank, and per round the opponent's start
rank, the colour (``w``/``b``) and the result (``1``, ``=``, ``0``; blank while unfinished). When a board
has several games in a round, the last finished one counts.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from touchmove.broadcast.live_pgn import GameSnapshot
from touchmove.broadcast.tournament import Player, Tournament

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
                    pairing.black.name, pairing.black.fide_id or "", game.result,
                    (game.source or "") if finished else "", (game.reason or "") if finished else "",
                ])
    return out.getvalue()


def _key(player: Player) -> tuple[str, str]:
    return ("fide", str(player.fide_id)) if player.fide_id else ("name", player.name.casefold())


@dataclass
class _Entry:
    player: Player
    rank: int = 0
    games: dict[int, tuple[str, str, str]] = field(default_factory=dict)  # round -> (opponent key, colour, result)
    points: float = 0.0


def _counted(games: Sequence[GameSnapshot]) -> str:
    finished = [g.result for g in games if g.result != "*"]
    return finished[-1] if finished else "*"


def _put(line: list[str], column: int, text: str, width: int, *, right: bool = False) -> None:
    """Write ``text`` at TRF ``column`` (1-based) in a field of ``width`` characters."""
    text = text[:width]
    text = text.rjust(width) if right else text.ljust(width)
    start = column - 1
    if len(line) < start + width:
        line.extend(" " * (start + width - len(line)))
    line[start:start + width] = list(text)


def results_trf(tournament: Tournament, rounds: Mapping[int, RoundGames],
                round_date: Callable[[int], dt.date]) -> str:
    """The rounds' results as TRF16-style lines (see the module)."""
    players: dict[tuple[str, str], _Entry] = {}
    for number in sorted(rounds):
        games = rounds[number]
        for pairing in tournament.rounds[number].pairings:
            w = players.setdefault(_key(pairing.white), _Entry(pairing.white))
            b = players.setdefault(_key(pairing.black), _Entry(pairing.black))
            result = _counted(games.get(pairing.board) or ())
            score = {"1-0": ("1", "0", 1.0, 0.0), "0-1": ("0", "1", 0.0, 1.0),
                     "1/2-1/2": ("=", "=", 0.5, 0.5)}.get(result, (" ", " ", 0.0, 0.0))
            w.games[number] = (_key(pairing.black)[1], "w", score[0])
            b.games[number] = (_key(pairing.white)[1], "b", score[1])
            w.points += score[2]
            b.points += score[3]
    ordered = sorted(players.items(), key=lambda kv: (-(kv[1].player.elo or 0), kv[1].player.name.casefold()))
    start_rank = {key: i for i, (key, _) in enumerate(ordered, 1)}
    by_value = {key[1]: start_rank[key] for key in start_rank}
    standings = sorted(ordered, key=lambda kv: (-kv[1].points, start_rank[kv[0]]))
    for place, (_, entry) in enumerate(standings, 1):
        entry.rank = place
    numbers = sorted(rounds)
    dates = [round_date(n) for n in numbers] or [dt.date.today()]
    lines = [f"012 {tournament.event}", f"022 {tournament.site}",
             f"042 {min(dates).strftime('%Y/%m/%d')}", f"052 {max(dates).strftime('%Y/%m/%d')}"]
    all_rounds = range(1, max(numbers, default=0) + 1)
    for key, entry in ordered:
        p = entry.player
        line: list[str] = []
        _put(line, 1, "001", 3)
        _put(line, 5, str(start_rank[key]), 4, right=True)
        _put(line, 11, (p.title or "")[:3], 3, right=True)
        _put(line, 15, p.name, 33)
        _put(line, 49, str(p.elo or ""), 4, right=True)
        _put(line, 54, p.federation or "", 3)
        _put(line, 58, str(p.fide_id or ""), 11, right=True)
        _put(line, 81, f"{entry.points:.1f}", 4, right=True)
        _put(line, 86, str(entry.rank), 4, right=True)
        for r in all_rounds:
            col = 92 + 10 * (r - 1)
            if r in entry.games:
                opponent, colour, result = entry.games[r]
                _put(line, col, str(by_value[opponent]), 4, right=True)
                _put(line, col + 5, colour, 1)
                _put(line, col + 7, result, 1)
            else:
                _put(line, col, "0000", 4)
                _put(line, col + 5, "-", 1)
                _put(line, col + 7, " ", 1)
        lines.append("".join(line).rstrip())
    return "\n".join(lines) + "\n"
