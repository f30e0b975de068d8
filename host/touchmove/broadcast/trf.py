"""FIDE's Tournament Report File (TRF), both ways: pairings in from a pairing program, results out.

The layouts are FIDE's TRF-16 (C.04 Annex 2, 2016) and TRF-2026 (approved by the FIDE Council on
2025-05-12, applied from 2025-09-01); both keep the player record of TRF-16, column for column (1-based)::

    1-3 "001"   5-8 start rank   10 sex (m/w)   11-13 title   15-47 name "Last, First"   49-52 rating
    54-56 federation   58-68 FIDE id   70-79 birth date YYYY/MM/DD   81-84 points (11.5)   86-89 rank
    per round r, from column 92 + 10 (r - 1): 4 columns the opponent's start rank (0000: none),
    +5 the colour (w, b, - for none), +7 the result

Result codes: ``1`` ``=`` ``0`` (played), ``+`` ``-`` (forfeit win or loss), ``W`` ``D`` ``L`` (a game that
lasted less than one move: not rated), ``H`` ``F`` ``U`` ``Z`` (half, full, pairing-allocated, zero-point
bye); a blank result is a round paired and not played yet (how pairing programs exchange the round being
played). Tournament records: ``012`` name, ``022`` city, ``032`` federation, ``042``/``052`` first and last
date (YYYY/MM/DD), ``062``/``072`` players and rated players, ``092`` type, ``102`` chief arbiter, ``112``
deputy chief arbiters (one line each), ``122`` allotted time, ``132`` round dates (YY/MM/DD from column 92,
every 10 columns). TRF-2026 adds ``142`` number of rounds and ``222`` the encoded time control (the PGN
TimeControl shape: ``5400+30``, ``40/6000+30:900+30``), and writes titles in full (``GM``, ``WIM``) where
TRF-16 writes ``g``, ``wm``. Lines starting ``###`` are comments; records touchmove has no use for (national
ratings, teams, byes records, ...) are read past.

:func:`read_trf` reads a file, :func:`round_pairings` gives a round's games in board order, and
:func:`write_trf` writes results (see :mod:`.results_export`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

#: TRF-16's one- and two-letter titles and the full ones TRF-2026 writes.
TITLE_LETTERS = {"g": "GM", "m": "IM", "wg": "WGM", "f": "FM", "wm": "WIM", "c": "CM", "wf": "WFM", "wc": "WCM"}
LETTERS_OF_TITLE = {full: letter for letter, full in TITLE_LETTERS.items()}
#: Titles a player record may give (TRF-16's letters, the full ones, and FIDE's arbiter/trainer titles).
KNOWN_TITLES = frozenset({*TITLE_LETTERS, *(t.lower() for t in TITLE_LETTERS.values()),
                          "h", "hgm", "ia", "fa", "na", "fst", "fi", "ft", "dt", "nt", "ai", "ca", "aca"})
#: The player record's blank separator columns (1-based): between the tag, start rank, title, name,
#: rating, federation, FIDE id, birth date, points and rank. A letter there means the columns are shifted.
SEPARATORS = (4, 9, 14, 48, 53, 57, 69, 80, 85)
PLAYED = {"1": 1.0, "=": 0.5, "0": 0.0}
UNRATED = {"W": 1.0, "D": 0.5, "L": 0.0}
FORFEITS = {"+": 1.0, "-": 0.0}
BYES = {"H": 0.5, "F": 1.0, "U": 1.0, "Z": 0.0}
RESULT_CODES = frozenset({*PLAYED, *UNRATED, *FORFEITS, *BYES, " "})
FIRST_ROUND_COLUMN = 92
ROUND_WIDTH = 10
VARIANTS = ("16", "2026")


class TrfError(ValueError):
    """A TRF line that cannot be read (one line: the line number and what is wrong)."""


@dataclass(frozen=True, slots=True)
class TrfGame:
    """A player's round: the opponent's start rank (0: none), the colour (``w``, ``b``, ``-``), the code."""

    opponent: int
    colour: str
    result: str


@dataclass
class TrfPlayer:
    start_rank: int
    name: str
    sex: str | None = None
    title: str | None = None
    rating: int | None = None
    federation: str | None = None
    fide_id: int | None = None
    birth: str | None = None
    points: float | None = None
    rank: int | None = None
    rounds: dict[int, TrfGame] = field(default_factory=dict)


@dataclass
class TrfTournament:
    name: str = ""
    city: str = ""
    federation: str = ""
    start: dt.date | None = None
    end: dt.date | None = None
    chief_arbiter: str = ""
    deputies: list[str] = field(default_factory=list)
    time_control: str = ""
    #: Record 122 as written (free text: ``90 min + 30 s/move``).
    allotted_time: str = ""
    kind: str = ""
    rounds_total: int | None = None
    round_dates: dict[int, dt.date] = field(default_factory=dict)
    #: Each player's line number (for the errors found across lines).
    lines: dict[int, int] = field(default_factory=dict)
    players: dict[int, TrfPlayer] = field(default_factory=dict)

    @property
    def rounds(self) -> list[int]:
        """Every round some player has a record for (or a date)."""
        found = {r for p in self.players.values() for r in p.rounds} | set(self.round_dates)
        return sorted(found)


@dataclass(frozen=True, slots=True)
class TrfPairing:
    """One game of a round: the players (by start rank) and the result (``*`` while not played)."""

    white: int
    black: int
    result: str
    forfeit: bool = False


def _field(line: str, first: int, last: int) -> str:
    return line[first - 1:last].strip()


def _date(text: str, where: str, *, short: bool = False) -> dt.date | None:
    if not text:
        return None
    try:
        if short:  # YY/MM/DD
            yy, mm, dd = (int(x) for x in text.split("/"))
            return dt.date(2000 + yy, mm, dd)
        return dt.date.fromisoformat(text.replace("/", "-").replace(".", "-"))
    except ValueError:
        raise TrfError(f"{where}: not a date: {text!r}") from None


def _int(text: str, where: str, what: str) -> int | None:
    if not text:
        return None
    if not text.isascii() or not text.isdigit():
        raise TrfError(f"{where}: {what} must be a number, not {text!r}")
    return int(text)


def _player(line: str, where: str) -> TrfPlayer:
    rank = _int(_field(line, 5, 8), where, "the start rank")
    if rank is None or rank < 1:
        raise TrfError(f"{where}: a player record needs its start rank in columns 5-8")
    for column in SEPARATORS:
        if len(line) >= column and line[column - 1] != " ":
            raise TrfError(f"{where}: column {column} must be blank (the record's columns are shifted? the name "
                           f"is in columns 15-47, the title in 11-13); found {line[column - 1]!r} in "
                           f"{line[max(0, column - 6):column + 5].strip()!r}")
    sex = _field(line, 10, 10).lower()
    if sex not in ("", "m", "w"):
        raise TrfError(f"{where}: sex (column 10) must be m, w or blank, not {sex!r}")
    name = _field(line, 15, 47)
    if not name:
        raise TrfError(f"{where}: player {rank} has no name (columns 15-47)")
    title = _field(line, 11, 13)
    if title and title.lower() not in KNOWN_TITLES:
        raise TrfError(f"{where}: title (columns 11-13) {title!r} is not a FIDE title (GM, IM, ... or g, m, ...)")
    points = _field(line, 81, 84)
    try:
        score = float(points) if points else None
    except ValueError:
        raise TrfError(f"{where}: points must be like 11.5, not {points!r}") from None
    player = TrfPlayer(
        rank, name, sex=_field(line, 10, 10).lower() or None,
        title=TITLE_LETTERS.get(title.lower(), title.upper()) or None,
        rating=_int(_field(line, 49, 52), where, "the rating") or None,
        federation=_field(line, 54, 56).upper() or None,
        fide_id=_int(_field(line, 58, 68), where, "the FIDE id") or None,
        birth=_field(line, 70, 79) or None, points=score, rank=_int(_field(line, 86, 89), where, "the rank"))
    number = 1
    while len(line) >= FIRST_ROUND_COLUMN + ROUND_WIDTH * (number - 1):
        col = FIRST_ROUND_COLUMN + ROUND_WIDTH * (number - 1)
        chunk = line[col - 1:col + 7].ljust(8)
        if chunk.strip():
            opponent = _int(chunk[0:4].strip(), f"{where} round {number}", "the opponent") or 0
            colour = chunk[5].lower() if chunk[5] != " " else "-"
            code = chunk[7].upper()
            if colour not in ("w", "b", "-") or code not in RESULT_CODES:
                raise TrfError(f"{where} round {number}: colour {chunk[5]!r} or result {chunk[7]!r} is not TRF")
            if opponent and colour == "-":
                raise TrfError(f"{where} round {number}: an opponent needs a colour (w or b)")
            player.rounds[number] = TrfGame(opponent, colour, code)
        number += 1
    return player


def read_trf(text: str, name: str = "TRF") -> TrfTournament:
    """The tournament a TRF-16 or TRF-2026 file describes; TrfError (one line) for what does not fit."""
    out = TrfTournament()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r\n")
        where = f"{name} line {number}"
        tag, value = line[:3], line[4:].strip()
        if not line.strip() or tag == "###":
            continue
        if tag == "001":
            player = _player(line, where)
            if player.start_rank in out.players:
                raise TrfError(f"{where}: start rank {player.start_rank} is given twice")
            out.players[player.start_rank] = player
            out.lines[player.start_rank] = number
        elif tag == "012":
            out.name = value
        elif tag == "022":
            out.city = value
        elif tag == "032":
            out.federation = value.upper()
        elif tag == "042":
            out.start = _date(value, where)
        elif tag == "052":
            out.end = _date(value, where)
        elif tag == "092":
            out.kind = value
        elif tag == "102":
            out.chief_arbiter = value
        elif tag == "112":
            if value:  # an empty record names nobody
                out.deputies.append(value)
        elif tag == "122":
            out.allotted_time = value
            out.time_control = out.time_control or value
        elif tag == "222":
            out.time_control = value or out.time_control  # the encoded one wins: the PGN TimeControl shape
        elif tag in ("142", "XXR"):
            out.rounds_total = _int(value, where, "the number of rounds")
        elif tag == "132":
            r = 1
            while len(line) >= FIRST_ROUND_COLUMN + ROUND_WIDTH * (r - 1):
                col = FIRST_ROUND_COLUMN + ROUND_WIDTH * (r - 1)
                when = _date(line[col - 1:col + 7].strip(), f"{where} round {r}", short=True)
                if when is not None:
                    out.round_dates[r] = when
                r += 1
    if not out.players:
        raise TrfError(f"{name}: no player records (001): is it a TRF file?")
    _check_opponents(out, name)
    return out


def _check_opponents(trf: TrfTournament, name: str) -> None:
    """Each pairing given by both players must agree (opponent, opposite colours, matching results)."""
    for p in trf.players.values():
        for r, game in p.rounds.items():
            if not game.opponent:
                continue
            other = trf.players.get(game.opponent)
            back = other.rounds.get(r) if other is not None else None
            where = f"{name} line {trf.lines.get(p.start_rank, '?')}"
            if back is None or back.opponent != p.start_rank or {back.colour, game.colour} != {"w", "b"}:
                raise TrfError(f"{where}: round {r}: player {p.start_rank} meets {game.opponent}, who does not "
                               "have him as opponent with the other colour")
            if not _results_agree(game.result, back.result):
                raise TrfError(f"{where}: round {r}: player {p.start_rank}'s result {game.result!r} and player "
                               f"{game.opponent}'s {back.result!r} (line {trf.lines.get(game.opponent, '?')}) do "
                               "not make one game's result")


def _results_agree(mine: str, theirs: str) -> bool:
    """Whether two players' codes of one game make a result: both blank, played codes scoring 1 together
    (``1``/``0``, ``=``/``=``; ``W``/``L``, ``D``/``D``), or a forfeit (``+``/``-``; ``-``/``-`` both lost)."""
    if mine == " " or theirs == " ":
        return mine == theirs
    for table in (PLAYED, UNRATED):
        if mine in table and theirs in table:
            return table[mine] + table[theirs] == 1.0
    if mine in FORFEITS and theirs in FORFEITS:
        return not (mine == theirs == "+")  # (-/-: a double forfeit)
    return False


def _score_before(trf: TrfTournament, rank: int, number: int) -> float:
    player = trf.players[rank]
    return sum(points(g.result) or 0.0 for r, g in player.rounds.items() if r < number)


def points(code: str) -> float | None:
    """What a result code scores (None: a round not played yet)."""
    for table in (PLAYED, UNRATED, FORFEITS, BYES):
        if code in table:
            return table[code]
    return None


def round_pairings(trf: TrfTournament, number: int) -> list[TrfPairing]:
    """Round ``number``'s games in board order: the pair with the higher score before the round first (then
    the higher sum, then the better start rank), as pairing programs number their boards."""
    games: list[TrfPairing] = []
    for p in trf.players.values():
        game = p.rounds.get(number)
        if game is None or not game.opponent or game.colour != "w":
            continue
        other = trf.players[game.opponent].rounds[number]
        result, forfeit = _pgn_result(game.result, other.result)
        games.append(TrfPairing(p.start_rank, game.opponent, result, forfeit))

    def order(g: TrfPairing) -> tuple[float, float, int]:
        a, b = _score_before(trf, g.white, number), _score_before(trf, g.black, number)
        return (-max(a, b), -(a + b), min(g.white, g.black))

    return sorted(games, key=order)


def _pgn_result(white: str, black: str) -> tuple[str, bool]:
    """The PGN result of a game from both players' codes, and whether it was a forfeit (a double forfeit,
    ``-``/``-``, is ``0-1`` with the forfeit flag: see :func:`game_codes`)."""
    if white == " " or black == " ":
        return "*", False
    score = points(white)
    if score is None:
        return "*", False
    if white == black == "-":
        return "0-0", True
    text = {1.0: "1-0", 0.5: "1/2-1/2", 0.0: "0-1"}[score]
    return text, white in FORFEITS or black in FORFEITS


# -- writing ---------------------------------------------------------------------------------------------
@dataclass
class TrfEntry:
    """One player as written: who, and per round (opponent key, colour, code)."""

    key: tuple[str, str]
    name: str
    sex: str | None
    title: str | None
    rating: int | None
    federation: str | None
    fide_id: int | None
    birth: str | None
    games: dict[int, tuple[tuple[str, str] | None, str, str]] = field(default_factory=dict)

    @property
    def points(self) -> float:
        return sum(points(code) or 0.0 for _, _, code in self.games.values())


@dataclass(frozen=True, slots=True)
class TrfHeader:
    """The tournament records a rating report needs."""

    name: str
    city: str
    federation: str = ""
    chief_arbiter: str = ""
    deputies: tuple[str, ...] = ()
    kind: str = ""
    time_control: str = ""
    rounds_total: int | None = None
    #: Record 122 (free text); the PGN TimeControl when empty.
    allotted_time: str = ""


def _put(line: list[str], column: int, text: str, width: int, *, right: bool = False) -> None:
    """Write ``text`` at ``column`` (1-based) in a field of ``width`` characters."""
    text = text[:width]
    text = text.rjust(width) if right else text.ljust(width)
    start = column - 1
    if len(line) < start + width:
        line.extend(" " * (start + width - len(line)))
    line[start:start + width] = list(text)


def _title(title: str | None, variant: str) -> str:
    if not title:
        return ""
    full = TITLE_LETTERS.get(title.lower(), title.upper())
    return LETTERS_OF_TITLE.get(full, "") if variant == "16" else full


def write_trf(header: TrfHeader, entries: Iterable[TrfEntry], round_dates: Mapping[int, dt.date],
              *, variant: str = "16") -> str:
    """The TRF text (``variant`` ``16`` or ``2026``): tournament records, then one ``001`` per player (start
    ranks by rating, then name; ranks by points, then start rank)."""
    if variant not in VARIANTS:
        raise ValueError(f"TRF variant must be one of {', '.join(VARIANTS)}")
    listed = sorted(entries, key=lambda e: (-(e.rating or 0), e.name.casefold()))
    start = {e.key: i for i, e in enumerate(listed, 1)}
    standing = sorted(listed, key=lambda e: (-e.points, start[e.key]))
    rank = {e.key: i for i, e in enumerate(standing, 1)}
    numbers = sorted(round_dates)
    last = max([*numbers, *(r for e in listed for r in e.games)], default=0)
    lines = [f"012 {header.name}", f"022 {header.city}"]
    if header.federation:
        lines.append(f"032 {header.federation}")
    if numbers:
        lines += [f"042 {round_dates[numbers[0]].strftime('%Y/%m/%d')}",
                  f"052 {round_dates[numbers[-1]].strftime('%Y/%m/%d')}"]
    lines += [f"062 {len(listed)}", f"072 {sum(1 for e in listed if e.rating)}"]
    if header.kind:
        lines.append(f"092 {header.kind}")
    if header.chief_arbiter:
        lines.append(f"102 {header.chief_arbiter}")
    lines += [f"112 {deputy}" for deputy in header.deputies]
    if header.allotted_time or header.time_control:
        lines.append(f"122 {header.allotted_time or header.time_control}")
    if variant == "2026":
        # the tournament's rounds: unknown is left out (the rounds so far would tell pairing programs that
        # the event is over)
        if header.rounds_total:
            lines.append(f"142 {header.rounds_total}")
        if header.time_control:
            lines.append(f"222 {header.time_control}")
    if numbers:
        dates: list[str] = []
        _put(dates, 1, "132", 3)
        for r in numbers:
            _put(dates, FIRST_ROUND_COLUMN + ROUND_WIDTH * (r - 1), round_dates[r].strftime("%y/%m/%d"), 8)
        lines.append("".join(dates).rstrip())
    for e in listed:
        line: list[str] = []
        _put(line, 1, "001", 3)
        _put(line, 5, str(start[e.key]), 4, right=True)
        _put(line, 10, e.sex or "", 1)
        _put(line, 11, _title(e.title, variant), 3, right=True)
        _put(line, 15, e.name, 33)
        _put(line, 49, str(e.rating or ""), 4, right=True)
        _put(line, 54, e.federation or "", 3)
        _put(line, 58, str(e.fide_id or ""), 11, right=True)
        _put(line, 70, e.birth or "", 10)
        _put(line, 81, f"{e.points:.1f}", 4, right=True)
        _put(line, 86, str(rank[e.key]), 4, right=True)
        for r in range(1, last + 1):
            col = FIRST_ROUND_COLUMN + ROUND_WIDTH * (r - 1)
            opponent, colour, code = e.games.get(r, (None, "-", "Z"))
            _put(line, col, f"{start[opponent]:4d}" if opponent is not None else "0000", 4)
            _put(line, col + 5, colour, 1)
            _put(line, col + 7, code, 1)
        lines.append("".join(line).rstrip())
    return "\n".join(lines) + "\n"


def game_codes(result: str, plies: int | None, forfeit: bool) -> tuple[str, str]:
    """The white and black codes of a game: ``plies`` None for a result the file gave (played elsewhere)."""
    if result == "*":
        return " ", " "
    if result == "0-0":  # a double forfeit: both lost
        return "-", "-"
    white = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[result]
    if forfeit and white != 0.5:
        return ("+", "-") if white == 1.0 else ("-", "+")
    table: Sequence[str] = ("0", "=", "1") if plies is None or plies >= 2 else ("L", "D", "W")
    index = {0.0: 0, 0.5: 1, 1.0: 2}
    return table[index[white]], table[index[1.0 - white]]
