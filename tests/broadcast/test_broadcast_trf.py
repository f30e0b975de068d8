"""TRF exchange with pairing programs: pairings in (TRF-16 and TRF-2026), results out, read again.

The input TRF is laid out here column by column from FIDE's layouts (TRF-16, C.04 Annex 2; TRF-2026): a
7-player Swiss, rounds 1 and 2 played (a forfeit, a half-point bye, pairing-allocated byes), round 3 paired.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.broadcast.broadcast_helpers import tournament_data
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.tournament import parse_tournament
from touchmove.broadcast.trf import TrfError, read_trf, round_pairings
from touchmove.broadcast.trf_tournament import tournament_toml
from touchmove.cli import main


def at(line: list[str], column: int, text: str) -> None:
    """Put ``text`` at 1-based ``column`` (the layouts' numbering)."""
    while len(line) < column - 1 + len(text):
        line.append(" ")
    line[column - 1:column - 1 + len(text)] = list(text)


# start rank, sex, title (TRF-16 letters), name, rating, federation, FIDE id, birth, points
PLAYERS = [
    (1, "m", "g", "Carlsen, Magnus", "2830", "NOR", "1503014", "1990/11/30", "1.5"),
    (2, "m", "m", "Doe, John", "2500", "USA", "2000001", "1985/01/01", "1.5"),
    (3, "w", "wg", "Roe, Jane", "2400", "ENG", "3000003", "1999/02/02", "1.5"),
    (4, "m", "f", "Poe, Ed", "2300", "FRA", "4000004", "", "1.0"),
    (5, "w", "", "Moe, Ann", "2200", "GER", "5000005", "", "1.0"),
    (6, "m", "c", "Loe, Bob", "2100", "ESP", "6000006", "", "0.0"),
    (7, "m", "", "Zoe, Cy", "", "", "", "", "1.0"),
]
# per player (start rank): round -> (opponent, colour, code)
ROUNDS: dict[int, dict[int, tuple[str, str, str]]] = {
    1: {1: ("4", "w", "1"), 2: ("3", "b", "="), 3: ("2", "w", " ")},
    2: {1: ("5", "w", "="), 2: ("7", "b", "+"), 3: ("1", "b", " ")},
    3: {1: ("6", "b", "1"), 2: ("1", "w", "="), 3: ("5", "b", " ")},
    4: {1: ("1", "b", "0"), 2: ("6", "w", "1"), 3: ("7", "w", " ")},
    5: {1: ("2", "b", "="), 2: ("0000", "-", "H"), 3: ("3", "w", " ")},
    6: {1: ("3", "w", "0"), 2: ("4", "b", "0"), 3: ("0000", "-", "U")},
    7: {1: ("0000", "-", "U"), 2: ("2", "w", "-"), 3: ("4", "b", " ")},
}


def sample_trf(*, variant: str = "16", rounds: dict[int, dict[int, tuple[str, str, str]]] = ROUNDS) -> str:
    lines = ["### a Swiss for the tests", "012 Test Open 2026", "022 Lisbon", "032 POR", "042 2026/11/28",
             "052 2026/11/30", "062 7", "072 6", "092 Individual: Swiss-System", "102 Ricca, Roberto",
             "112 Deputy, One", "112 Deputy, Two", "122 90 min + 30 s"]
    if variant == "2026":
        lines += ["142 5", "222 5400+30"]
    dates: list[str] = []
    at(dates, 1, "132")
    for r, day in ((1, "26/11/28"), (2, "26/11/29"), (3, "26/11/30")):
        at(dates, 92 + 10 * (r - 1), day)
    lines.append("".join(dates))
    for rank, sex, title, name, rating, fed, fide, birth, points in PLAYERS:
        line: list[str] = []
        at(line, 1, "001")
        at(line, 5, f"{rank:4d}")
        at(line, 10, sex)
        if title:
            full = {"g": "GM", "m": "IM", "wg": "WGM", "f": "FM", "c": "CM"}[title]
            at(line, 11, (title if variant == "16" else full).rjust(3))
        at(line, 15, name)
        at(line, 49, rating.rjust(4))
        at(line, 54, fed)
        at(line, 58, fide.rjust(11))
        at(line, 70, birth)
        at(line, 81, points.rjust(4))
        at(line, 86, f"{rank:4d}")
        for r in (1, 2, 3):
            opponent, colour, code = rounds[rank][r]
            col = 92 + 10 * (r - 1)
            at(line, col, opponent.rjust(4))
            at(line, col + 5, colour)
            at(line, col + 7, code)
        lines.append("".join(line).rstrip())
    return "\r\n".join(lines) + "\r\n"  # the layouts end lines with CR


@pytest.mark.parametrize("variant", ["16", "2026"])
def test_read_a_pairing_programs_trf(variant: str) -> None:
    trf = read_trf(sample_trf(variant=variant))
    assert (trf.name, trf.city, trf.federation, trf.chief_arbiter) == ("Test Open 2026", "Lisbon", "POR",
                                                                       "Ricca, Roberto")
    assert trf.deputies == ["Deputy, One", "Deputy, Two"] and trf.start == dt.date(2026, 11, 28)
    assert trf.round_dates == {1: dt.date(2026, 11, 28), 2: dt.date(2026, 11, 29), 3: dt.date(2026, 11, 30)}
    assert trf.rounds_total == (5 if variant == "2026" else None)
    assert trf.time_control == ("5400+30" if variant == "2026" else "90 min + 30 s")
    p1, p3, p7 = trf.players[1], trf.players[3], trf.players[7]
    assert (p1.name, p1.title, p1.rating, p1.federation, p1.fide_id, p1.birth, p1.sex) == (
        "Carlsen, Magnus", "GM", 2830, "NOR", 1503014, "1990/11/30", "m")
    assert p3.title == "WGM" and p3.sex == "w" and p7.rating is None and p7.fide_id is None
    assert [(g.white, g.black, g.result) for g in round_pairings(trf, 1)] == [(1, 4, "1-0"), (2, 5, "1/2-1/2"),
                                                                            (6, 3, "0-1")]
    round2 = round_pairings(trf, 2)  # boards by the score before the round
    assert [(g.white, g.black, g.result, g.forfeit) for g in round2] == [
        (3, 1, "1/2-1/2", False), (7, 2, "0-1", True), (4, 6, "1-0", False)]
    assert [(g.white, g.black, g.result) for g in round_pairings(trf, 3)] == [(1, 2, "*"), (5, 3, "*"),
                                                                            (4, 7, "*")]


BAD = [
    ("001    x m Name", "start rank"),
    ("001    1 m    " + " " * 33, "no name"),
    ("001    1 m    Name" + " " * 29 + " 12x4", "rating must be a number"),
    ("001    1 m    Name" + " " * 73 + "   2 q 1", "is not TRF"),
    ("042 2026/13/45", "not a date"),
]


@pytest.mark.parametrize(("line", "message"), BAD)
def test_a_bad_trf_line_is_one_line_error(line: str, message: str) -> None:
    with pytest.raises(TrfError) as info:
        read_trf(f"012 X\n{line}\n", "t.trf")
    assert message in str(info.value) and "t.trf line 2" in str(info.value) and "\n" not in str(info.value)


def test_one_sided_pairing_is_refused() -> None:
    rounds = {rank: dict(games) for rank, games in ROUNDS.items()}
    rounds[4][1] = ("6", "b", "0")  # player 4 says he met 6 in round 1; 1 and 6 say otherwise
    with pytest.raises(TrfError, match="does not have him as opponent"):
        read_trf(sample_trf(rounds=rounds))


@given(st.text(max_size=400))
@settings(max_examples=300, deadline=None)
def test_any_text_reads_or_is_refused_in_one_line(text: str) -> None:
    try:
        read_trf(text)
    except TrfError as exc:
        assert "\n" not in str(exc)


def test_init_tournament_from_trf_writes_a_file_that_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    source = tmp_path / "swiss.trf"
    source.write_text(sample_trf(variant="2026"), encoding="utf-8")
    target = tmp_path / "tournament.toml"
    assert main(["init", "tournament", str(target), "--from-trf", str(source)]) == 0
    data = tomllib.loads(target.read_text(encoding="utf-8"))
    t = parse_tournament(data, base_dir=tmp_path)
    assert t.round == 3 and sorted(t.rounds) == [1, 2, 3] and t.time_control == "5400+30"
    assert (t.report.federation, t.report.chief_arbiter, t.report.rounds) == ("POR", "Ricca, Roberto", 5)
    assert t.report.deputy_arbiters == ("Deputy, One", "Deputy, Two")
    b2 = t.rounds[2].pairings[1]
    assert (b2.white.name, b2.black.name, b2.result, b2.forfeit) == ("Zoe, Cy", "Doe, John", "0-1", True)
    assert [(p.name, kind) for p, kind in t.rounds[2].byes] == [("Moe, Ann", "H")]
    assert [(p.name, kind) for p, kind in t.rounds[3].byes] == [("Loe, Bob", "U")]
    r3 = t.rounds[3].pairings
    assert [(p.board, p.board_id, p.white.name, p.black.name, p.result) for p in r3] == [
        (1, "board-001", "Carlsen, Magnus", "Doe, John", None), (2, "board-002", "Moe, Ann", "Roe, Jane", None),
        (3, "board-003", "Poe, Ed", "Zoe, Cy", None)]
    assert r3[0].white.fide_id == 1503014 and r3[0].white.title == "GM" and r3[0].white.birth == "1990/11/30"
    # errors: one line, exit 2
    assert main(["init", "tournament", str(tmp_path / "x.toml"), "--from-trf", str(tmp_path / "none.trf")]) == 2
    assert main(["init", "tournament", str(tmp_path / "y.toml"), "--from-trf", str(source), "--round", "9"]) == 2
    assert main(["init", "bridge", str(tmp_path / "z.toml"), "--from-trf", str(source)]) == 2
    err = capsys.readouterr().err
    assert "round 9 has no pairings" in err and len([x for x in err.splitlines() if x.strip()]) == 3


def _columns(line: str, first: int, last: int) -> str:
    return line[first - 1:last]


@pytest.mark.parametrize("variant", ["16", "2026"])
def test_results_out_column_by_column_and_read_again(tmp_path: Path, variant: str) -> None:
    asyncio.run(_round_trip(tmp_path, variant))


async def _round_trip(tmp_path: Path, variant: str) -> None:
    text = tournament_toml(sample_trf(variant=variant), name="swiss.trf")
    data: dict[str, Any] = tomllib.loads(text)
    data["broadcast"]["output_dir"] = str(tmp_path)
    hub = Broadcaster(parse_tournament(data)).open()
    # round 3 on the boards: board 1 a fool's mate (black wins), board 2 still going, board 3 one ply and a
    # result from the arbiter (a game of less than one move)
    for seq, e in enumerate([{"type": "game_start", "game": 1},
                             *({"type": "move", "game": 1, "ply": i, "uci": u}
                               for i, u in enumerate(["f2f3", "e7e5", "g2g4", "d8h4"], 1)),
                             {"type": "game_end", "game": 1, "result": "0-1", "reason": "checkmate"}], 1):
        hub.handle(BridgeMessage("touchmove", "board-001", "events", {**e, "seq": seq, "session": "a"}))
    for seq, e in enumerate([{"type": "game_start", "game": 1},
                             {"type": "move", "game": 1, "ply": 1, "uci": "d2d4"}], 1):
        hub.handle(BridgeMessage("touchmove", "board-002", "events", {**e, "seq": seq, "session": "b"}))
        hub.handle(BridgeMessage("touchmove", "board-003", "events", {**e, "seq": seq, "session": "c"}))
    hub.actions.record_result(3, "1-0")
    hub.storage.save_state()
    name = "results.trf" if variant == "16" else "results-2026.trf"
    out = (tmp_path / name).read_text(encoding="utf-8")
    lines = out.splitlines()
    records = {line[:3]: line[4:] for line in lines if line[:3] != "001"}
    assert records["012"] == "Test Open 2026" and records["022"] == "Lisbon" and records["032"] == "POR"
    assert records["042"] == "2026/11/28" and records["052"] == "2026/11/30" and records["102"] == "Ricca, Roberto"
    assert records["062"] == "7" and records["072"] == "6"
    assert [line[4:] for line in lines if line.startswith("112")] == ["Deputy, One", "Deputy, Two"]
    dates = next(line for line in lines if line.startswith("132"))
    assert [_columns(dates, 92 + 10 * r, 99 + 10 * r) for r in range(3)] == ["26/11/28", "26/11/29", "26/11/30"]
    if variant == "2026":
        assert records["142"] == "5" and records["222"] == "5400+30"
    else:
        assert "142" not in records and "222" not in records
    players = {_columns(line, 15, 47).strip(): line for line in lines if line.startswith("001")}
    carlsen = players["Carlsen, Magnus"]
    assert _columns(carlsen, 1, 3) == "001" and _columns(carlsen, 5, 8) == "   1"
    assert _columns(carlsen, 10, 10) == "m"
    assert _columns(carlsen, 11, 13) == ("  g" if variant == "16" else " GM")
    assert _columns(carlsen, 49, 52) == "2830" and _columns(carlsen, 54, 56) == "NOR"
    assert _columns(carlsen, 58, 68) == "    1503014" and _columns(carlsen, 70, 79) == "1990/11/30"
    # rounds: r1 beat 4 (white), r2 drew 3 (black), r3 lost the fool's mate to 2 (white, played: "0")
    assert [_columns(carlsen, 92 + 10 * r, 99 + 10 * r) for r in range(3)] == ["   4 w 1", "   3 b =", "   2 w 0"]
    assert _columns(carlsen, 81, 84) == " 1.5"
    jane = players["Roe, Jane"]
    assert _columns(jane, 11, 13) == (" wg" if variant == "16" else "WGM")
    assert _columns(jane.ljust(119), 112, 119) == "   5 b  "  # unfinished: opponent and colour, no result yet
    assert _columns(players["Zoe, Cy"], 92, 119) == "0000 - U     2 w -     4 b L"  # bye, forfeit, < 1 move
    assert _columns(players["Moe, Ann"], 102, 109) == "0000 - H"
    assert _columns(players["Loe, Bob"], 112, 119) == "0000 - U"
    assert _columns(players["Doe, John"], 102, 109) == "   7 b +"
    # read again: the same pairings and results, round for round (start ranks are the export's own)
    again = read_trf(out, name)
    names = {p.start_rank: p.name for p in again.players.values()}
    games = {r: [(names[g.white], names[g.black], g.result, g.forfeit) for g in round_pairings(again, r)]
             for r in (1, 2, 3)}
    assert games[1] == [("Carlsen, Magnus", "Poe, Ed", "1-0", False), ("Doe, John", "Moe, Ann", "1/2-1/2", False),
                        ("Loe, Bob", "Roe, Jane", "0-1", False)]
    assert games[2][1] == ("Zoe, Cy", "Doe, John", "0-1", True)
    assert sorted(games[3]) == sorted([("Carlsen, Magnus", "Doe, John", "0-1", False),
                                       ("Moe, Ann", "Roe, Jane", "*", False), ("Poe, Ed", "Zoe, Cy", "1-0", False)])
    back = parse_tournament({**tomllib.loads(tournament_toml(out, name=name)),
                             "broadcast": tournament_data(1, out=tmp_path)["broadcast"]})
    assert back.round == 3 and [(p.name, k) for p, k in back.rounds[2].byes] == [("Moe, Ann", "H")]


# -- issue 36, item 4: each defect a one-line error naming the line, or a correct import ---------------------
def _replace_line(text: str, start: str, new: str | None) -> str:
    lines = text.split("\r\n")
    index = next(i for i, line in enumerate(lines) if line.startswith(start))
    if new is None:
        del lines[index]
    else:
        lines[index] = new
    return "\r\n".join(lines)


def test_an_empty_deputy_record_names_nobody(tmp_path: Path) -> None:
    text = _replace_line(sample_trf(), "112 Deputy, Two", "112")
    text = _replace_line(text, "112 Deputy, One", "112 ")
    assert read_trf(text).deputies == []
    toml = tournament_toml(text)
    t = parse_tournament(tomllib.loads(toml), base_dir=tmp_path)  # `touchmove broadcast` takes the file
    assert t.report.deputy_arbiters == ()


def test_a_player_record_with_shifted_columns_is_refused_naming_its_line() -> None:
    line: list[str] = []
    at(line, 1, "001")
    at(line, 5, "   6")
    at(line, 10, "w")
    at(line, 11, "Adams, Anna")  # the name from column 11, not 15: the columns are shifted
    at(line, 49, "2100")
    text = _replace_line(sample_trf(), "001    6", "".join(line))
    with pytest.raises(TrfError) as info:
        read_trf(text, "swiss.trf")
    message = str(info.value)
    assert message.startswith("swiss.trf line 20: column 14 must be blank") and "\n" not in message, message


def test_both_players_winning_the_same_game_is_refused() -> None:
    rounds = {rank: dict(games) for rank, games in ROUNDS.items()}
    rounds[4][1] = ("1", "b", "1")  # 1 says he won against 4 in round 1, and so does 4
    with pytest.raises(TrfError) as info:
        read_trf(sample_trf(rounds=rounds), "swiss.trf")
    message = str(info.value)
    assert "round 1" in message and "do not make one game's result" in message and "line 1" in message, message


def test_free_text_allotted_time_is_kept_and_written_back(tmp_path: Path) -> None:
    text = _replace_line(sample_trf(), "122 ", "122 90 min + 30 s/move")
    toml = tournament_toml(text)
    t = parse_tournament(tomllib.loads(toml), base_dir=tmp_path)
    assert t.time_control == "?" and t.report.allotted_time == "90 min + 30 s/move"
    hub = Broadcaster(t, output_dir=tmp_path).open()
    hub.storage.save_state()
    for name in ("results.trf", "results-2026.trf"):
        assert "122 90 min + 30 s/move" in (tmp_path / name).read_text().splitlines(), name
        assert read_trf((tmp_path / name).read_text()).allotted_time == "90 min + 30 s/move"


def test_record_142_says_the_tournaments_rounds_or_nothing(tmp_path: Path) -> None:
    data = tournament_data(2, out=tmp_path)
    hub = Broadcaster(parse_tournament(data), output_dir=tmp_path).open()
    hub.storage.save_state()  # round 3 played, the number of rounds not known: no 142 (not "3": the event is not over)
    assert not [x for x in (tmp_path / "results-2026.trf").read_text().splitlines() if x.startswith("142")]
    data["report"] = {"rounds": 9}
    hub = Broadcaster(parse_tournament(data), output_dir=tmp_path / "nine").open()
    hub.storage.save_state()
    assert "142 9" in (tmp_path / "nine" / "results-2026.trf").read_text().splitlines()


def test_the_documented_command_order_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "r.trf"
    source.write_text(sample_trf(variant="2026"), encoding="utf-8")
    # docs/broadcast.md: `touchmove init tournament --from-trf round3.trf [tournament.toml] [--round N]`
    assert main(["init", "tournament", "--from-trf", str(source), str(tmp_path / "out.toml")]) == 0
    assert main(["init", "tournament", "--from-trf", str(source), str(tmp_path / "r2.toml"), "--round", "2"]) == 0
    assert tomllib.loads((tmp_path / "r2.toml").read_text())["round"] == 2
    assert parse_tournament(tomllib.loads((tmp_path / "out.toml").read_text()), base_dir=tmp_path).round == 3
    assert main(["init", "tournament", str(tmp_path / "a.toml"), "--from-trf", str(source), "b.toml"]) == 2
    assert "--from-trf takes one TRF" in capsys.readouterr().err


def test_a_double_forfeit_is_imported_and_written_back(tmp_path: Path) -> None:
    rounds = {rank: dict(games) for rank, games in ROUNDS.items()}
    rounds[1][1], rounds[4][1] = ("4", "w", "-"), ("1", "b", "-")  # round 1: neither came
    text = sample_trf(rounds=rounds)
    first_game = round_pairings(read_trf(text), 1)[0]
    assert (first_game.white, first_game.black, first_game.result, first_game.forfeit) == (1, 4, "0-0", True)
    t = parse_tournament(tomllib.loads(tournament_toml(text)), base_dir=tmp_path)
    first = t.rounds[1].pairings[0]
    assert (first.result, first.forfeit) == ("0-0", True)
    hub = Broadcaster(t, output_dir=tmp_path).open()
    hub.storage.save_state()
    back = read_trf((tmp_path / "results.trf").read_text())
    by_name = {p.name: p for p in back.players.values()}
    assert by_name["Carlsen, Magnus"].rounds[1].result == "-" and by_name["Poe, Ed"].rounds[1].result == "-"
