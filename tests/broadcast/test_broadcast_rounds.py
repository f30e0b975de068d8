"""The round model: frozen finished games, held games, results kept across restarts, checked input, rounds,
the delay (an injected clock), caching headers, the LiveChess-style JSON and the results export."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
import logging
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.broadcast.broadcast_helpers import read_games, tournament_data
from touchmove.broadcast.bridge_ingest import KINGS_STEADY_S, UNKNOWN_BOARDS_KEPT
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import ActionError, Broadcaster
from touchmove.broadcast.server import make_app
from touchmove.broadcast.tournament import TournamentError, parse_tournament
from touchmove.clocks import ManualClock
from touchmove.mqtt.events import EVENT_TYPES

SCHOLAR = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]  # mate: the board says 1-0


class Clock(ManualClock):
    """Time passing: ``now`` is the wall clock, and setting it lets the difference pass on both clocks."""

    def __init__(self, when: dt.datetime = dt.datetime(2026, 11, 29, 14, 0, tzinfo=dt.UTC)) -> None:
        super().__init__(wall=when.timestamp())

    @property
    def now(self) -> float:
        return self.now_wall

    @now.setter
    def now(self, value: float) -> None:
        self.advance(value - self.now_wall)


def events(ucis: list[str], game: int = 1, first_ply: int = 1, start: bool = True) -> list[dict[str, Any]]:
    board = chess.Board()
    out: list[dict[str, Any]] = [{"type": "game_start", "game": game, "fen": board.fen(), "t": 0}] if start else []
    for i, uci in enumerate(ucis, start=1):
        move = chess.Move.from_uci(uci)
        board.push(move)
        if i >= first_ply:
            out.append({"type": "move", "game": game, "ply": i, "uci": uci, "t": i})
            out.append({"type": "clock", "game": game, "ply": i, "side": "white" if i % 2 else "black",
                        "remaining": 180_000 - i * 1700, "t": i})
    return out


def flat(text: str) -> str:
    return " ".join(text.split())


def feed(hub: Broadcaster, board_id: str, evs: list[dict[str, Any]]) -> None:
    for e in evs:
        hub.handle(BridgeMessage("touchmove", board_id, "events", e))


def tournament(tmp_path: Path, boards: int = 2, **broadcast: Any) -> Any:
    data = tournament_data(boards, out=tmp_path)
    data["broadcast"].update(broadcast)
    return parse_tournament(data)


def two_rounds(tmp_path: Path, **round4: Any) -> Any:
    data = tournament_data(2, out=tmp_path)
    r4 = json.loads(json.dumps(data["rounds"][0]))
    r4["number"] = 4
    r4.pop("date")
    for b in r4["boards"]:
        b["white"], b["black"] = b["black"], b["white"]
    r4.update(round4)
    data["rounds"].append(r4)
    return parse_tournament(data)


def kings_to_centre(hub: Broadcaster, board_id: str, squares: tuple[int, int]) -> None:
    view = hub.storage.boards[board_id]
    pos = view.games.live().position()
    occ = int(pos.occupied) & ~chess.BB_SQUARES[pos.king(chess.WHITE)] & ~chess.BB_SQUARES[pos.king(chess.BLACK)]
    occ |= chess.BB_SQUARES[squares[0]] | chess.BB_SQUARES[squares[1]]
    hub.handle(BridgeMessage("touchmove", board_id, "state", {"in_sync": False, "occupancy": f"{occ:016x}"}))
    clock = hub.storage.clock
    assert isinstance(clock, Clock)
    clock.now += KINGS_STEADY_S      # the kings stand there: a result once they have stood that long
    hub.ingest.confirm_all_kings()


def set_up_again(hub: Broadcaster, board_id: str, game: int, ucis: list[str]) -> None:
    """The board cleared and set up again: the bridge starts its next game, and play begins."""
    feed(hub, board_id, events(ucis, game=game))


@pytest.mark.parametrize("source", ["board", "kings", "arbiter"])
def test_a_finished_game_is_frozen_and_kept_across_a_restart(tmp_path: Path, source: str) -> None:
    clock = Clock()
    t = tournament(tmp_path)
    hub = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    if source == "board":
        feed(hub, "b01", events(SCHOLAR))
        feed(hub, "b01", [{"type": "game_end", "game": 1, "result": "1-0", "reason": "checkmate", "t": 9}])
        expected = "1-0"
    elif source == "kings":
        feed(hub, "b01", events(SCHOLAR[:4]))
        kings_to_centre(hub, "b01", (chess.D4, chess.D5))
        expected = "1/2-1/2"
    else:
        feed(hub, "b01", events(SCHOLAR[:4]))
        hub.actions.record_result(1, "0-1")
        expected = "0-1"
    feed(hub, "b02", events(["d2d4", "d7d5"]))
    assert hub.storage.by_number[1].game.results.effective() == expected
    before = hub.outputs.round_pgn()
    # players clear the board and set it up again: the bridge starts game 2, and they play on
    set_up_again(hub, "b01", 2, ["g1f3", "g8f6"])
    view = hub.storage.by_number[1]
    assert hub.outputs.round_pgn() == before and view.games.held is not None and view.games.held.ply == 2
    assert view.to_json()["held"]["game"] == 2
    hub.storage.save_if_due()  # what the writer does within write_interval
    # a restart: the round PGN is byte for byte the same, and so is the push's
    again = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    for e in events(["d2d4", "d7d5"])[1:]:  # board 2's game comes back from the bridge (its events/PGN)
        again.handle(BridgeMessage("touchmove", "b02", "events", e))
    assert again.outputs.round_pgn() == before
    assert again.outputs.public_pgn(boards=range(1, 2)) == hub.outputs.public_pgn(boards=range(1, 2))
    # the retained state and PGN of the bridge's current game (2) do not touch game 1
    again.handle(BridgeMessage("touchmove", "b01", "state", {"game": 2, "ply": 2, "in_sync": True}))
    again.handle(BridgeMessage("touchmove", "b01", "pgn", '[Result "*"]\n\n1. Nf3 Nf6 *\n'))
    assert again.outputs.round_pgn() == before
    # the arbiter allows the board's second game: it becomes its own entry, round 3.1.2
    again.actions.permit_game(1, "next")
    text = again.outputs.round_pgn()
    assert text.startswith(before.split("\n\n[Event")[0]) and '[Round "3.1.2"]' in text
    assert "1. Nf3 { [%clk 0:02:58] } 1... Nf6 { [%clk 0:02:56] } *" in flat(text)  # clocks kept


def test_a_restart_mid_round_takes_the_live_games_back_from_the_bridge(tmp_path: Path) -> None:
    t = tournament(tmp_path)
    hub = Broadcaster(t, output_dir=tmp_path, clock=Clock()).open()
    feed(hub, "b01", events(SCHOLAR))
    feed(hub, "b01", [{"type": "game_end", "game": 1, "result": "1-0", "reason": "checkmate", "t": 9}])
    feed(hub, "b02", events(["d2d4", "d7d5"]))
    hub.storage.save_state()
    feed(hub, "b02", events(["d2d4", "d7d5", "c2c4"], first_ply=3, start=False))  # not saved yet
    again = Broadcaster(t, output_dir=tmp_path, clock=Clock()).open()
    assert again.storage.by_number[2].game.needs_resync  # until the bridge's retained PGN says where the game is
    pgn = "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n"
    again.handle(BridgeMessage("touchmove", "b01", "state", {"game": 1, "ply": 7, "in_sync": True}))
    again.handle(BridgeMessage("touchmove", "b01", "pgn", pgn))
    again.handle(BridgeMessage("touchmove", "b02", "state", {"game": 1, "ply": 3, "in_sync": True}))
    again.handle(BridgeMessage("touchmove", "b02", "pgn", "1. d4 {[%clk 0:02:58]} d5 {[%clk 0:02:56]} "
                                                           "2. c4 {[%clk 0:02:54]} *\n"))
    assert again.outputs.round_pgn() == hub.outputs.round_pgn()
    assert again.storage.by_number[1].game.results.board_reason == "checkmate"


def test_the_state_of_another_event_is_not_taken(tmp_path: Path) -> None:
    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()
    hub.storage.save_state()
    data = tournament_data(2, out=tmp_path)
    data["event"] = "Another Open"
    with pytest.raises(ValueError, match="is the state of 'Test Open', not 'Another Open'"):
        Broadcaster(parse_tournament(data), output_dir=tmp_path, clock=Clock()).open()
    (tmp_path / "round-3-state.json").write_text("{not json")
    with pytest.raises(ValueError, match="cannot be read"):
        Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()


def test_a_game_with_moves_but_no_result_is_not_wiped(tmp_path: Path) -> None:
    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()
    feed(hub, "b01", events(SCHOLAR[:6]))  # a draw agreed, or a resignation: the board cannot tell
    set_up_again(hub, "b01", 2, [])
    assert hub.storage.by_number[1].game.ply == 6 and hub.storage.by_number[1].games.held is not None
    saved = tmp_path / "round-3-state.json"
    hub.storage.save_if_due()  # the new game held: on disk at once
    assert json.loads(saved.read_text())["boards"]["1"]["held"]["number"] == 2
    mtime = saved.stat().st_mtime_ns
    feed(hub, "b01", events(["e2e4", "e7e5"], game=2, start=False))  # the held game's moves: the bridge has them
    hub.storage.save_if_due()
    assert saved.stat().st_mtime_ns == mtime
    hub.actions.record_result(1, "1/2-1/2")  # the arbiter enters the handshake's result later
    assert '[Result "1/2-1/2"]' in hub.outputs.round_pgn() \
        and "Nf6 { [%clk 0:02:49] } 1/2-1/2" in flat(hub.outputs.round_pgn())
    # a game with no moves and no result is simply replaced (nothing to lose)
    feed(hub, "b02", events([]))
    feed(hub, "b02", events(["c2c4"], game=2))
    assert hub.storage.by_number[2].game.number == 2 and hub.storage.by_number[2].games.held is None


def test_allowed_before_it_starts_and_replace(tmp_path: Path) -> None:
    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()
    feed(hub, "b01", events(SCHOLAR[:2]))
    hub.actions.record_result(1, "1-0")
    hub.actions.permit_game(1, "next")  # an armageddon will follow
    feed(hub, "b01", events(["d2d4"], game=2))
    view = hub.storage.by_number[1]
    assert len(view.games.entries) == 2 and view.games.held is None and view.game.ply == 1
    assert view.games.entries[0].results.effective() == "1-0"
    hub.actions.record_result(1, "0-1", 1)  # the first game's result corrected
    assert view.games.entries[0].results.effective() == "0-1" and view.game.results.effective() == "*"
    with pytest.raises(ActionError):
        hub.actions.permit_game(1, "sometimes")
    with pytest.raises(ActionError):
        hub.actions.record_result(1, "1-0", 3)


def test_a_position_set_up_by_the_arbiter_is_the_rounds_game(tmp_path: Path) -> None:
    async def publish(broker: int, topic: str, payload: bytes) -> None:
        return None

    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, publish=publish, clock=Clock()).open()
    feed(hub, "b01", events(SCHOLAR[:3]))
    fen = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"
    asyncio.run(hub.actions.setup(1, fen))
    feed(hub, "b01", [{"type": "game_start", "game": 2, "fen": fen, "t": 1},
                      {"type": "move", "game": 2, "ply": 1, "uci": "e2e4", "t": 2}])
    view = hub.storage.by_number[1]
    assert len(view.games.entries) == 1 and view.game.number == 2 and view.games.held is None
    assert '[FEN "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"]' in hub.outputs.round_pgn()


def test_game_resumed_withdraws_the_board_result(tmp_path: Path) -> None:
    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()
    feed(hub, "b01", events(SCHOLAR[:4]))
    feed(hub, "b01", [{"type": "game_end", "game": 1, "result": "1/2-1/2", "reason": "insufficient", "t": 5}])
    assert hub.storage.by_number[1].game.results.effective() == "1/2-1/2"
    feed(hub, "b01", [{"type": "game_resumed", "game": 1, "ply": 4, "t": 6}])
    assert hub.storage.by_number[1].game.results.effective() == "*"
    feed(hub, "b01", [{"type": "game_resumed", "game": True, "ply": 4, "t": 6}])  # checked: not used
    assert hub.storage.by_number[1].rejected == 1


def test_every_event_is_checked(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()
    feed(hub, "b01", events(SCHOLAR[:4]))
    game = hub.storage.by_number[1].game
    feed(hub, "b01", [{"type": "takeback", "game": 1, "ply": True}])  # a bool is not ply 1
    assert game.ply == 4
    feed(hub, "b01", [{"type": "move", "game": 1, "ply": 10**30, "uci": "d1h5"}])  # out of range: not used
    assert not game.needs_resync
    feed(hub, "b01", [{"type": "move", "game": 1, "ply": 5, "uci": "d1h5"}])
    assert game.ply == 5 and not game.needs_resync
    # a gap: the next ply is missing; the bridge's PGN is taken once it has it (ply 6), whatever came
    feed(hub, "b01", [{"type": "move", "game": 1, "ply": 9, "uci": "a2a3"}])
    assert game.needs_resync and game.resync_ply == 6
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 *\n"))
    assert not game.needs_resync and game.ply == 6
    # alerts: the code must be a string; an unknown code is kept as it is
    feed(hub, "b01", [{"type": "alert", "game": 1, "ply": 7, "code": {"x": 1}, "seq": 1, "session": "s"}])
    feed(hub, "b01", [{"type": "alert", "game": 1, "ply": 7, "code": "brand_new_code", "seq": 2, "session": "s"}])
    assert [a.code for a in hub.storage.alerts] == ["brand_new_code"]
    # unknown boards: logged once each (the first ones), memory bounded
    with caplog.at_level(logging.INFO, logger="touchmove.broadcast.broadcaster"):
        for i in range(3000):
            hub.handle(BridgeMessage("touchmove", f"ghost{i}", "state", {"in_sync": True}))
        for i in range(3000):
            hub.handle(BridgeMessage("touchmove", f"ghost{i}", "state", {"in_sync": True}))
    lines = [r for r in caplog.records if "not in round" in r.getMessage()]
    assert len(lines) < 100 and hub.ingest.unknown_boards >= 3000 and len(hub.ingest._unknown) <= UNKNOWN_BOARDS_KEPT
    assert hub.status()["rejected_events"] == 3


JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                    max_size=3), max_leaves=6)
FIELDS = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from([*sorted(EVENT_TYPES), "odd"]) | JSONISH,
    "game": st.integers(-1, 3) | JSONISH, "ply": st.integers(-1, 12) | JSONISH,
    "uci": st.sampled_from(["e2e4", "e7e5", "g1f3", "zz", "e7e8q"]) | JSONISH,
    "remaining": JSONISH, "result": st.sampled_from(["1-0", "*", "x"]) | JSONISH, "code": JSONISH,
    "fen": JSONISH, "chess960": JSONISH, "detail": JSONISH, "seq": JSONISH, "session": JSONISH, "ts": JSONISH,
})


@settings(max_examples=150, deadline=None)
@given(st.lists(FIELDS, max_size=25))
def test_any_event_stream_leaves_a_readable_round(tmp_path_factory: pytest.TempPathFactory,
                                                  stream: list[dict[str, Any]]) -> None:
    out = tmp_path_factory.mktemp("fuzz")
    hub = Broadcaster(tournament(out, boards=1), output_dir=out, clock=Clock()).open()
    feed(hub, "b01", events(["e2e4"]) + stream)
    text = hub.outputs.round_pgn()
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None and not game.errors
    hub.storage.save_state()
    reopened = Broadcaster(tournament(out, boards=1), output_dir=out, clock=Clock()).open()
    assert reopened.outputs.round_pgn().count("[Event") >= 1


def test_the_delay_hides_the_last_minutes_from_every_public_output(tmp_path: Path) -> None:
    asyncio.run(_delay(tmp_path))


async def _delay(tmp_path: Path) -> None:
    clock = Clock()
    t = two_rounds(tmp_path, delay_minutes=0)
    data_delay = tournament(tmp_path, delay_minutes=15)
    assert data_delay.delay_seconds() == 900 and t.delay_seconds(4) == 0
    hub = Broadcaster(data_delay, output_dir=tmp_path, clock=clock).open()
    async with TestClient(TestServer(make_app(hub, "tok"))) as client:
        clock.now += 1
        feed(hub, "b01", events(SCHOLAR[:2]))
        clock.now += 300
        feed(hub, "b01", events(SCHOLAR[:4], first_ply=3, start=False))
        assert "2. Bc4 { [%clk 0:02:54] } 2... Nc6" in flat(hub.outputs.round_pgn())  # the arbiter's view is live
        assert (await client.get("/api/state?svg=0")).status == 401  # the live console is private meanwhile
        state = await (await client.get("/api/state?svg=0", headers={"Authorization": "Bearer tok"})).json()
        assert state["boards"][0]["ply"] == 4 and state["delay_minutes"] == 15
        public = await (await client.get("/round/3.pgn")).text()
        assert "e4" not in public and '[Result "*"]' in public  # nothing is 15 minutes old yet
        clock.now += 900 - 300
        public = await (await client.get("/round/3.pgn")).text()
        assert "1. e4 { [%clk 0:02:58] } 1... e5" in public and "Bc4" not in public
        game = await (await client.get("/live/round-3/game-1.json")).json()
        assert game["moves"] == ["e4 178+4", "e5 176+6"]  # clock after the move, seconds it took (180+2)
        assert "Bc4" not in await (await client.get("/round/3/game/1.pgn")).text()
        assert hub.storage.delay_line.next_due(clock.monotonic()) == pytest.approx(clock.monotonic() + 300)
        clock.now += 300
        assert "2. Bc4" in await (await client.get("/round/3.pgn")).text()
        assert hub.outputs.write_now().read_text() == hub.outputs.public_pgn()  # the file is public too
        # the push reads the same delayed text
        assert "Bc4" in hub.outputs.public_pgn(boards=range(1, 2))
    # a restart keeps what was public, and the rest still waits for its time
    feed(hub, "b01", events(SCHOLAR[:6], first_ply=5, start=False))
    hub.storage.save_state()
    public = hub.outputs.public_pgn()
    restarted = Broadcaster(data_delay, output_dir=tmp_path, clock=clock).open()
    assert restarted.outputs.public_pgn() == public and "Qh5" not in public
    clock.now += 900
    assert "3. Qh5" in restarted.outputs.public_pgn()


def test_etag_last_modified_and_date(tmp_path: Path) -> None:
    asyncio.run(_caching(tmp_path))


async def _caching(tmp_path: Path) -> None:
    clock = Clock()
    t = two_rounds(tmp_path)  # round 4 has no date in the file
    hub = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    async with TestClient(TestServer(make_app(hub, "tok"))) as client:
        first = await client.get("/round/3.pgn")
        etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
        assert modified.endswith(" GMT") and '[Date "2026.11.29"]' in await first.text()
        again = await client.get("/round/3.pgn", headers={"If-None-Match": etag})
        assert again.status == 304
        since = await client.get("/round/3.pgn", headers={"If-Modified-Since": modified})
        assert since.status == 304
        feed(hub, "b01", events(["e2e4"]))
        clock.now += 10
        changed = await client.get("/round/3.pgn", headers={"If-None-Match": etag})
        assert changed.status == 200 and changed.headers["ETag"] != etag
        assert changed.headers["Last-Modified"] != modified
        new_etag = changed.headers["ETag"]
    # a restarted broadcaster gives the same content the same ETag (never a 304 for other content)
    hub.storage.save_state()
    restarted = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    feed(restarted, "b01", events(["e2e4"])[1:])
    async with TestClient(TestServer(make_app(restarted, "tok"))) as client:
        resp = await client.get("/round/3.pgn", headers={"If-None-Match": new_etag})
        assert resp.status == 304
        # round 4 (no date in the file) is dated the day it started, and keeps it past midnight
        restarted.switch_round(4)
        assert '[Date "2026.11.29"]' in await (await client.get("/round/4.pgn")).text()
    clock.now += 86400
    later = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    assert later.storage.round.number == 4 and '[Date "2026.11.29"]' in later.outputs.public_pgn()


def test_rounds_switch_live_and_past_rounds_stay_served(tmp_path: Path) -> None:
    asyncio.run(_rounds(tmp_path))


async def _rounds(tmp_path: Path) -> None:
    clock = Clock()
    t = two_rounds(tmp_path, start="2026-11-30T15:00:00+01:00")
    hub = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    feed(hub, "b01", events(SCHOLAR))
    feed(hub, "b01", [{"type": "game_end", "game": 1, "result": "1-0", "reason": "checkmate", "t": 9}])
    feed(hub, "b02", events(["d2d4"], game=5))
    hub.actions.record_result(2, "1/2-1/2")
    round3 = hub.outputs.round_pgn()
    assert hub.storage.scheduled_round() is None
    clock.now = dt.datetime(2026, 11, 30, 14, 0, 1, tzinfo=dt.UTC).timestamp()
    assert hub.storage.scheduled_round() == 4
    async with TestClient(TestServer(make_app(hub, "tok"))) as client:
        bad = await client.post("/api/round", json={"round": 9}, headers={"Authorization": "Bearer tok"})
        assert bad.status == 400
        denied = await client.post("/api/round", json={"round": 4})
        assert denied.status == 401
        ok = await client.post("/api/round", json={"round": 4}, headers={"Authorization": "Bearer tok"})
        assert ok.status == 200 and hub.storage.round.number == 4
        # the bridges' games of round 3 (retained state and PGN, late events) stay out of round 4
        hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 1, "ply": 7, "in_sync": True}))
        hub.handle(BridgeMessage("touchmove", "b01", "pgn", "1. e4 e5 *\n"))
        feed(hub, "b02", [{"type": "move", "game": 5, "ply": 2, "uci": "d7d5"}])
        assert hub.storage.by_number[1].game.ply == 0 and hub.storage.by_number[2].game.ply == 0
        feed(hub, "b01", events(["c2c4"], game=2))
        assert hub.storage.by_number[1].game.ply == 1
        assert await (await client.get("/round/3.pgn")).text() == round3
        everything = await (await client.get("/all.pgn")).text()
        assert everything.count("[Event ") == 4 and '[Round "4.1"]' in everything and "1. c4" in everything
        assert "1. e4" in await (await client.get("/round/3/game/1.pgn")).text()
        assert (await client.get("/round/3/game/1-2.pgn")).status == 404
        assert (await client.get("/round/7.pgn")).status == 404
        status = await (await client.get("/status.json")).json()
        assert status["round"] == 4 and status["rounds"] == [3, 4]
    # a restart stays on round 4 (the file still says 3)
    hub.storage.save_state()
    assert Broadcaster(t, output_dir=tmp_path, clock=clock).open().storage.round.number == 4
    # the schedule switches by itself when a round's start has come
    fresh = tmp_path / "fresh"
    scheduled = Broadcaster(t, output_dir=fresh, clock=clock).open()
    assert scheduled.storage.round.number == 3
    task = asyncio.create_task(scheduled.run_schedule(period=0.01))
    for _ in range(100):
        if scheduled.storage.round.number == 4:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    assert scheduled.storage.round.number == 4 and (fresh / "current-round.json").exists()


def test_livechess_json_and_results_export(tmp_path: Path) -> None:
    asyncio.run(_outputs(tmp_path))


async def _outputs(tmp_path: Path) -> None:
    data = tournament_data(3, out=tmp_path)
    data["rounds"][0]["boards"][0]["white"]["federation"] = "nor"
    t = parse_tournament(data)
    hub = Broadcaster(t, output_dir=tmp_path, clock=Clock()).open()
    feed(hub, "b01", events(SCHOLAR))
    feed(hub, "b01", [{"type": "game_end", "game": 1, "result": "1-0", "reason": "checkmate", "t": 9}])
    feed(hub, "b02", events(["d2d4", "d7d5", "c2c4"]))
    feed(hub, "b03", events(["e2e4"]))
    kings_to_centre(hub, "b03", (chess.D4, chess.D5))  # 1/2-1/2 by the kings
    hub.actions.record_result(2, "0-1")
    async with TestClient(TestServer(make_app(hub, "tok"))) as client:
        tour = await (await client.get("/live/tournament.json")).json()
        assert tour["name"] == "Test Open" and tour["rounds"][2] == {"count": 3, "live": 1}
        assert tour["rounds"][0] == {"count": 0, "live": 0} and tour["eboards"] == ["b01", "b02", "b03"]
        index = await (await client.get("/live/round-3/index.json")).json()
        assert index["date"] == "2026-11-29" and len(index["pairings"]) == 3
        first = index["pairings"][0]
        assert first["white"]["lname"] == "White" and first["white"]["fname"] == "Player 1"
        assert first["white"]["fideid"] == 1001 and first["white"]["federation"] == "NOR"
        assert first["result"] == "1-0" and first["live"] is False
        game = await (await client.get("/live/round-3/game-2.json")).json()
        assert game["moves"] == ["d4 178+4", "d5 176+6", "c4 174+6"] and game["result"] == "BLACKWIN"
        assert game["clock"] is None and game["chess960"] == 518  # a finished game runs no clock
        assert game["serialNr"] == "b02"
        assert (await client.get("/live/round-3/game-9.json")).status == 404
        text = await (await client.get("/round/3/results.csv")).text()
        rows = list(csv.DictReader(io.StringIO(text)))
        assert [(r["board"], r["result"], r["source"]) for r in rows] == \
            [("1", "1-0", "board"), ("2", "0-1", "arbiter"), ("3", "1/2-1/2", "kings")]
        assert rows[0]["reason"] == "checkmate" and rows[0]["white_fide_id"] == "1001"
        assert rows[2]["reason"] == "kings in the centre" and rows[1]["reason"] == ""
        trf = (await (await client.get("/results.trf")).text()).splitlines()
    assert trf[0] == "012 Test Open" and trf[2] == "042 2026/11/29"
    players = [line for line in trf if line.startswith("001")]
    assert len(players) == 6
    top = players[0]  # the highest rating: White, Player 1 (2499), won on board 1 as white
    assert top[4:8] == "   1" and top[14:47].rstrip() == "White, Player 1" and top[48:52] == "2499"
    assert top[53:56] == "NOR" and top[57:68] == "       1001" and top[80:84] == " 1.0"
    assert top[111:115].strip() != "" and top[116] == "w" and top[118] == "1"  # round 3 at column 112
    hub.storage.save_state()
    assert (tmp_path / "round-3-results.csv").read_text() == text
    assert (tmp_path / "results.trf").read_text().splitlines() == trf


TOML_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False) | st.text(max_size=12)
    | st.dates() | st.datetimes(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_tournament_file_is_accepted_or_refused_in_one_line(data: st.DataObject) -> None:
    """Whatever a value in the file is replaced with, parsing returns a tournament or a TournamentError."""
    raw = tournament_data(2, out=Path("out"))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(raw)
        path = data.draw(st.sampled_from(paths))
        target = raw
        for key in path[:-1]:
            target = target[key]
        if data.draw(st.booleans()) and isinstance(target, dict):
            target[data.draw(st.text(max_size=8))] = data.draw(TOML_VALUES)
        else:
            target[path[-1]] = data.draw(TOML_VALUES)
    try:
        parse_tournament(raw)
    except TournamentError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_damaged_round_state_is_taken_or_refused_in_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                                data: st.DataObject) -> None:
    out = tmp_path_factory.mktemp("state")
    hub = Broadcaster(tournament(out, boards=1), output_dir=out, clock=Clock()).open()
    feed(hub, "b01", events(SCHOLAR[:3]))
    hub.actions.record_result(1, "1-0")
    path = out / "round-3-state.json"
    raw = json.loads(path.read_text())
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(_paths(raw)))
        target = raw
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = data.draw(JSONISH)
    path.write_text(json.dumps(raw))
    try:
        again = Broadcaster(tournament(out, boards=1), output_dir=out, clock=Clock()).open()
    except ValueError as exc:
        assert "\n" not in str(exc) and "round-3-state.json" in str(exc)
    else:
        assert chess.pgn.read_game(io.StringIO(again.outputs.round_pgn())) is not None


def test_a_round_opened_here_for_the_first_time_starts_clean(tmp_path: Path) -> None:
    """The bridge's retained game (another round's, another event's) is held, never public; the arbiter may
    take it in (the decision undone); a new game, or the first move of the game shown empty, is the round's."""
    hub = Broadcaster(tournament(tmp_path, boards=3), output_dir=tmp_path, clock=Clock()).open()
    empty = hub.outputs.round_pgn()
    mate = "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n"
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 5, "ply": 7, "in_sync": True}))
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", mate, retained=True))
    # board 2: no retained message; a move past the first ply of a game not seen starting (then its PGN)
    feed(hub, "b02", events(["d2d4", "d7d5", "c2c4"], game=8, first_ply=3, start=False))
    hub.handle(BridgeMessage("touchmove", "b02", "pgn", "1. d4 d5 2. c4 *\n", retained=True))
    # board 3: the bridge shows an empty game, then its first move comes: the round's game
    hub.handle(BridgeMessage("touchmove", "b03", "state", {"game": 2, "ply": 0, "in_sync": True}))
    hub.handle(BridgeMessage("touchmove", "b03", "pgn", '[Result "*"]\n\n*\n', retained=True))
    feed(hub, "b03", events(["e2e4"], game=2, start=False))
    assert hub.storage.by_number[3].game.ply == 1 and hub.storage.by_number[3].games.held is None
    games = read_games(hub.outputs.round_pgn())
    assert [len(list(g.mainline_moves())) for g in games] == [0, 0, 1] and empty.count("[Event") == 3
    assert [g.headers["Result"] for g in games] == ["*", "*", "*"]
    held = [hub.storage.by_number[n].to_json()["held"] for n in (1, 2)]
    assert [(h["game"], h["ply"], h["before_round"]) for h in held] == [(5, 7, True), (8, 3, True)]
    # later events of the held games stay out; a restart keeps them held
    feed(hub, "b02", [{"type": "move", "game": 8, "ply": 4, "uci": "e7e6", "t": 9}])
    hub.storage.save_state()
    again = Broadcaster(tournament(tmp_path, boards=3), output_dir=tmp_path, clock=Clock()).open()
    assert again.outputs.round_pgn() == hub.outputs.round_pgn()
    assert again.storage.by_number[2].to_json()["held"]["before_round"] is True
    # board 1 set up again: the new game is the round's, the held one is dropped
    feed(again, "b01", events(["g1f3"], game=6))
    assert again.storage.by_number[1].game.ply == 1 and again.storage.by_number[1].games.held is None
    # the arbiter takes board 2's game in: it is the round's game (whatever the permission asked)
    again.actions.permit_game(2, "next")
    assert again.storage.by_number[2].game.ply == 4 and len(again.storage.by_number[2].games.entries) == 1
    assert [len(list(g.mainline_moves())) for g in read_games(again.outputs.round_pgn())] == [1, 4, 1]


def test_a_round_switched_to_live_does_not_take_the_last_games(tmp_path: Path) -> None:
    hub = Broadcaster(two_rounds(tmp_path), output_dir=tmp_path, clock=Clock()).open()
    feed(hub, "b01", [*events(SCHOLAR), {"type": "game_end", "game": 1, "result": "1-0", "reason": "checkmate"}])
    hub.switch_round(4)
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n",
                             retained=True))
    assert [len(list(g.mainline_moves())) for g in read_games(hub.outputs.round_pgn())] == [0, 0]


def test_a_bridge_numbering_afresh_after_a_game_from_before_the_round(tmp_path: Path) -> None:
    """The retained game 1 (another round's) is held; the board's bridge, on a fresh journal, starts its own
    game 1: the round's game, not a redelivered start."""
    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 1, "ply": 7, "in_sync": True}))
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n",
                             retained=True))
    assert hub.storage.by_number[1].games.opening.held
    feed(hub, "b01", [{**e, "session": "fresh"} for e in events(["d2d4", "d7d5"])])
    assert hub.storage.by_number[1].game.ply == 2 and hub.storage.by_number[1].games.held is None


def test_a_game_started_during_an_outage_at_the_rounds_start_is_the_rounds(tmp_path: Path) -> None:
    """The bridge showed game 4 (another round's) when the round opened; the broadcaster then lost its broker,
    the board started game 5 and played: back, the retained game 5 is the round's, not held."""
    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 4, "ply": 7, "in_sync": True}, retained=True))
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n",
                             retained=True))
    assert hub.storage.by_number[1].games.opening.held and hub.storage.by_number[1].game.ply == 0
    hub.storage.save_state()
    again = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()  # a restart keeps it
    again.handle(BridgeMessage("touchmove", "b01", "state", {"game": 5, "ply": 3, "in_sync": True}, retained=True))
    again.handle(BridgeMessage("touchmove", "b01", "pgn", "1. d4 d5 2. c4 *\n", retained=True))
    assert again.storage.by_number[1].game.ply == 3 and again.storage.by_number[1].game.number == 5
    # board 2 showed nothing when the round opened: a played game seen first from its PGN is held
    again.handle(BridgeMessage("touchmove", "b02", "pgn", "1. d4 d5 2. c4 *\n", retained=True))
    assert again.storage.by_number[2].games.opening.held


def test_a_result_read_from_the_pgn_then_told_by_its_event_is_saved_with_its_reason(tmp_path: Path) -> None:
    """The bridge's retained PGN may come before the events (they wait for the journal): its result is taken at
    once ("1-0", reason "pgn"), and the game_end event that follows tells the reason (checkmate). The reason is
    part of what the results export says, so it is on disk at once too, not at the next periodic save (a club's
    rehearsal read "1-0,board,pgn" in round-1-results.csv until the broadcaster stopped)."""
    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=Clock()).open()
    feed(hub, "b01", events(SCHOLAR[:-1]))
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 1, "ply": 7, "in_sync": True}))
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n"))
    hub.storage.save_if_due()
    results = tmp_path / "round-3-results.csv"
    assert ",1-0,board,pgn" in results.read_text()
    feed(hub, "b01", events(SCHOLAR, first_ply=7, start=False))
    feed(hub, "b01", [{"type": "game_end", "game": 1, "result": "1-0", "reason": "checkmate", "t": 9}])
    hub.storage.save_if_due()
    assert ",1-0,board,checkmate" in results.read_text()
