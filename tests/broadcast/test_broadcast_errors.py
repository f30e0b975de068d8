"""Errors that stop nothing silently: tournament files that could mean something else, MQTT settings that
could only fail once serving, HTTP parameters ``isdigit`` accepts but ``int`` refuses, plies past the game."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.broadcast.broadcast_helpers import tournament_data
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.console_api import count_param
from touchmove.broadcast.server import make_app
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import TournamentError, load_tournament, parse_tournament
from touchmove.clocks import ManualClock


def _with(change: Any, tmp_path: Path) -> dict[str, Any]:
    data = copy.deepcopy(tournament_data(3, out=tmp_path))
    change(data)
    return data


def _board(n: int) -> Any:
    return lambda d: d["rounds"][0]["boards"][n]


CASES: list[tuple[str, Any, str]] = [
    ("quoted board", lambda d: _board(1)(d).update(board="7"), "without quotes"),
    ("quoted round", lambda d: d.update(round="3"), "without quotes"),
    ("one player on two boards", lambda d: _board(2)(d).update(white=copy.deepcopy(_board(0)(d)["white"])),
     "plays on boards 1 and 3"),
    ("same name, no FIDE id", lambda d: [_board(0)(d)["black"].pop("fide_id"),
                                        _board(1)(d)["white"].update(name="black,  player 1", fide_id=None)],
     "plays on boards 1 and 2"),
    ("against himself", lambda d: _board(0)(d)["black"].update(fide_id=1001), "plays against himself"),
    ("tls as a word", lambda d: d["brokers"][0].update(tls="no"), "brokers.tls must be true or false"),
    ("token as a number", lambda d: d["broadcast"].update(token=123), "broadcast.token must be"),
    ("url as a number", lambda d: d["brokers"][0].update(url=1883), "brokers.url must be"),
    ("user name as a number", lambda d: d["brokers"][0].update(username=1234), "brokers.username must be"),
    ("assign as a word", lambda d: d["broadcast"].update(assign="yes"), "broadcast.assign must be"),
]


@pytest.mark.parametrize(("what", "change", "message"), CASES, ids=[c[0] for c in CASES])
def test_tournament_values_that_could_mean_something_else_are_refused(tmp_path: Path, what: str, change: Any,
                                                                      message: str) -> None:
    with pytest.raises(TournamentError) as info:
        parse_tournament(_with(change, tmp_path))
    text = str(info.value)
    assert message in text and "\n" not in text, text


MQTT_CASES: list[tuple[str, Any, str]] = [
    ("missing CA file", lambda d: d["brokers"][0].update(tls=True, ca_file="/nonexistent/ca.pem"), "no such file"),
    ("CA file not a certificate", lambda d: d["brokers"][0].update(tls=True, ca_file=__file__), "TLS files"),
    ("wildcard in a base", lambda d: d["brokers"][0].update(bases=["hall/+"]), "base topic"),
    ("# in a base", lambda d: d["brokers"][0].update(bases=["hall/#/x"]), "base topic"),
    ("empty topic level", lambda d: d["brokers"][0].update(bases=["hall//a"]), "base topic"),
    ("share group with a slash", lambda d: d["brokers"][0].update(share_group="a/b"), "base topic"),
]


@pytest.mark.parametrize(("what", "change", "message"), MQTT_CASES, ids=[c[0] for c in MQTT_CASES])
def test_bad_mqtt_settings_stop_before_serving(tmp_path: Path, what: str, change: Any, message: str) -> None:
    t = parse_tournament(_with(change, tmp_path))
    svc = BroadcastService(t, port=0)     # making it reads nothing: start() checks, before serving
    with pytest.raises(TournamentError) as info:
        asyncio.run(svc.start(wait_mqtt=None))
    assert message in str(info.value) and "\n" not in str(info.value)
    assert not svc.hub.opened


def test_the_command_says_one_line_and_exits_2_before_serving(tmp_path: Path) -> None:
    config = tmp_path / "t.toml"
    config.write_text('event = "E"\nround = 1\n[broadcast]\noutput_dir = "out"\nport = 0\n'
                      '[[brokers]]\nurl = "mqtts://127.0.0.1:8883"\nca_file = "missing-ca.pem"\n'
                      '[[rounds]]\nnumber = 1\n[[rounds.boards]]\nboard = 1\nboard_id = "b1"\n'
                      'white = "A"\nblack = "B"\n')
    start = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).with_name("touchmove")), "broadcast", "--config", str(config)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing-ca.pem" in lines[0] and "Traceback" not in done.stderr
    assert "dashboard" not in done.stdout and time.monotonic() - start < 30


@given(st.text(min_size=1, max_size=30))
@settings(max_examples=300, deadline=None)
def test_count_param_is_int_only_for_ascii_digits(text: str) -> None:
    value = count_param(text)
    if value is not None:
        assert text.isascii() and text.isdigit() and value == int(text)
    else:
        assert not (text.isascii() and text.isdigit() and len(text) <= 9)


def test_http_numbers_isdigit_accepts_are_400_or_404_never_500(tmp_path: Path) -> None:
    asyncio.run(_http(tmp_path))


async def _http(tmp_path: Path) -> None:
    hub = Broadcaster(parse_tournament(tournament_data(2, out=tmp_path))).open()
    for seq, event in enumerate([{"type": "game_start", "game": 1},
                                 {"type": "move", "game": 1, "ply": 1, "uci": "e2e4", "san": "e4"},
                                 {"type": "move", "game": 1, "ply": 2, "uci": "e7e5", "san": "e5"}], 1):
        hub.handle(BridgeMessage("touchmove", "b01", "events",
                                 {**event, "board": "b01", "seq": seq, "session": "s1", "t": seq * 1000}))
    huge = "9" * 5000
    auth = {"Authorization": "Bearer s3cret"}
    async with TestClient(TestServer(make_app(hub, "s3cret"))) as client:
        expected = {
            "/round/\u00b3.pgn": 404, f"/round/{huge}.pgn": 404, "/round/3/game/\u00b9.pgn": 404,
            "/round/3/game/1-\u00b2.pgn": 404, f"/round/3/game/{huge}.pgn": 404,
            "/live/round-3/game-\u00b2.json": 404, "/live/round-\u0663/index.json": 404,
            "/board/\u00b9.svg": 404, "/api/boards/\u00b9": 404,
            "/api/boards/1/timeline?ply=\u00b2": 400, f"/api/boards/1/timeline?ply={huge}": 400,
            "/api/boards/1/timeline?ply=1&game=\u00b9": 400,
            "/api/boards/1/timeline?ply=2": 200, "/api/boards/1/timeline?ply=3": 200,
            "/api/boards/1/timeline?ply=4": 404, "/api/boards/1/timeline?ply=400": 404,
        }
        for path, status in expected.items():
            async with client.get(path, headers=auth) as resp:
                body = await resp.text()
                assert resp.status == status, (path, resp.status, body[:200])
                assert "Traceback" not in body and "invalid literal" not in body
        async with client.get("/api/audit?after=\u00b2", headers=auth) as resp:
            assert resp.status == 400
        async with client.post("/api/alerts/\u00b2/ack", headers=auth) as resp:
            assert resp.status == 404 and "invalid literal" not in await resp.text()


def test_an_unexpected_error_is_logged_not_shown(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    asyncio.run(_internal(tmp_path))
    assert "secret internal detail" in caplog.text


async def _internal(tmp_path: Path) -> None:
    hub = Broadcaster(parse_tournament(tournament_data(2, out=tmp_path))).open()

    def broken(**_: Any) -> dict[str, Any]:
        raise RuntimeError("secret internal detail")

    hub.status = broken  # type: ignore[method-assign]
    async with TestClient(TestServer(make_app(hub, "s3cret"))) as client, client.get("/status.json") as resp:
        assert resp.status == 500
        assert "secret" not in await resp.text()


def test_a_delayed_round_leaks_nothing_to_a_viewer_without_a_token(tmp_path: Path) -> None:
    asyncio.run(_private(tmp_path))


async def _private(tmp_path: Path) -> None:
    data = tournament_data(2, out=tmp_path)
    data["broadcast"]["delay_minutes"] = 15
    clock = ManualClock(wall=1_000_000.0)
    hub = Broadcaster(parse_tournament(data), clock=clock).open()
    assert hub.outputs.console_private
    for seq, event in enumerate([{"type": "game_start", "game": 1},
                                 {"type": "move", "game": 1, "ply": 1, "uci": "f2f3", "san": "f3"},
                                 {"type": "move", "game": 1, "ply": 2, "uci": "e7e5", "san": "e5"},
                                 {"type": "move", "game": 1, "ply": 3, "uci": "g2g4", "san": "g4"},
                                 {"type": "move", "game": 1, "ply": 4, "uci": "d8h4", "san": "Qh4#"},
                                 {"type": "game_end", "game": 1, "result": "0-1", "reason": "checkmate"},
                                 {"type": "game_start", "game": 2}], 1):
        hub.handle(BridgeMessage("touchmove", "b01", "events",
                                 {**event, "board": "b01", "seq": seq, "session": "s1", "t": seq * 1000}))
    assert hub.storage.by_number[1].games.held is not None  # game 2 started after the mate: held
    auth = {"Authorization": "Bearer s3cret"}
    async with TestClient(TestServer(make_app(hub, "s3cret"))) as client:
        async with client.get("/status.json") as resp:
            public = await resp.json()
        assert public["finished"] == 0 and "held_games" not in public and public["console_private"]
        async with client.get("/status.json", headers=auth) as resp:
            full = await resp.json()
        assert full["finished"] == 1 and full["held_games"] == [1]
        for path in ("/api/state", "/api/stream", "/board/1.svg", "/api/boards/1"):
            async with client.get(path) as resp:
                assert resp.status == 401, path
                assert "Qh4" not in await resp.text()
        async with client.get("/api/state?svg=0", headers=auth) as resp:
            assert resp.status == 200
        async with client.get("/round/3.pgn") as resp:
            assert "Qh4" not in await resp.text()  # the public PGN: nothing before the delay
        # the console's cookie (set by /api/auth) opens the live views for the browser's stream
        async with client.post("/api/auth", headers=auth) as resp:
            assert resp.status == 200
        async with client.get("/api/state?svg=0") as resp:
            assert resp.status == 200 and "Qh4" in await resp.text()
        client.session.cookie_jar.clear()
        clock.advance(15 * 60 + 1)  # the delay has passed: the public view has the mate, the status counts it
        async with client.get("/status.json") as resp:
            assert (await resp.json())["finished"] == 1
        async with client.get("/round/3.pgn") as resp:
            assert "Qh4#" in await resp.text()


def test_private_console_can_be_set_either_way(tmp_path: Path) -> None:
    data = tournament_data(1, out=tmp_path)
    data["broadcast"]["private_console"] = True
    assert Broadcaster(parse_tournament(data)).open().outputs.console_private
    data["broadcast"].update(private_console=False, delay_minutes=15)
    assert not Broadcaster(parse_tournament(data)).open().outputs.console_private
    data["broadcast"]["private_console"] = "yes"
    with pytest.raises(TournamentError, match="private_console must be true or false"):
        parse_tournament(data)


CLUB_FILE = """event = "Club night"
round = 1

[[rounds]]
number = 1
boards = [
  { board = 1, board_id = "club-01", white = { name = "Ames, Ann", fide_id = 1503014 }, black = "Berg, Bo" },
  { board = 2, board_id = "club-02", white = "Cole, Cy", black = "Dahl, Di" },
  { board = 3, board_id = "club-03", white = "Eyre, Ed", black = "Falk, Fay" },
]
"""


@pytest.mark.parametrize("board, before, after, message", [
    # issue 38: each was accepted before
    (2, '"Cole, Cy"', '"Ames, Ann"', "Ames, Ann plays on boards 1 and 2"),            # FIDE id on one board only
    (3, '"Falk, Fay"', '{ name = "Ames, Ann", elo = "2101" }', "elo must be an integer written without quotes"),
    (3, '"Falk, Fay"', '{ name = "Fay Falk", title = "Grandmaster" }', "FIDE's titles GM IM"),
    (3, '"Falk, Fay"', '{ name = "Fay Falk", fide_id = "1503014" }', "fide_id must be an integer"),
    (3, '"Falk, Fay"', '{ name = "Fay Falk", fide_id = 1503014 }', "plays on boards 1 and 3"),
])
def test_a_club_file_with_a_mistake_is_refused_in_one_line_naming_the_line(
        tmp_path: Path, board: int, before: str, after: str, message: str) -> None:
    lines = CLUB_FILE.splitlines()
    at = 6 + board                     # the board's line in the file (from 1)
    assert before in lines[at - 1]
    lines[at - 1] = lines[at - 1].replace(before, after)
    path = tmp_path / "tournament.toml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TournamentError) as caught:
        load_tournament(path)
    said = str(caught.value)
    assert said.startswith(f"{path} line {at}: ") and message in said and "\n" not in said, said


def test_titles_are_fides_and_trf_letters_are_read() -> None:
    data = tournament_data(2)
    data["rounds"][0]["boards"][0]["white"] = {"name": "A, B", "title": "wgm"}
    data["rounds"][0]["boards"][0]["black"] = {"name": "C, D", "title": "g"}       # TRF-16's letter for GM
    pairing = parse_tournament(data).rounds[data["rounds"][0]["number"]].pairings[0]
    assert (pairing.white.title, pairing.black.title) == ("WGM", "GM")


def test_two_players_of_one_name_with_their_own_fide_ids_may_play() -> None:
    data = tournament_data(2)
    boards = data["rounds"][0]["boards"]
    boards[0]["white"] = {"name": "Smith, John", "fide_id": 1}
    boards[1]["white"] = {"name": "Smith, John", "fide_id": 2}
    assert parse_tournament(data).rounds
