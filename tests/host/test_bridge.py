"""The bridge in-process, with stand-in serial links (no ports, no broker): the data path, resync, the
journal's resume after a crash, every MQTT command topic fuzzed, and the hardening of issue 9: journal write
errors, out-of-range numbers, device time jumps, board identity conflicts, checkpoints."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.helpers import game_moves, simple_timeline, unique_moves
from tests.host.running_bridges import open_bridge
from touchmove import records
from touchmove.bridge import Bridge, checkpoint, journal_faults, replay_entries
from touchmove.bridge.journal import Journal
from touchmove.bridge.mqtt_link import Outgoing
from touchmove.config import BridgeConfig, MqttConfig, SerialConfig
from touchmove.export import pgn_games, recording_gaps
from touchmove.rules import Engine
from touchmove.serial.line_check import add_check
from touchmove.serial.lines import FROM_BOARD
from touchmove.sim import hands


class FakeLink:
    accepts = FROM_BOARD      # a touchmove board's port (touchmove.serial.link.SerialLink)

    def __init__(self, path: str = "/dev/fake0") -> None:
        self.path = path
        self.key = path
        self.board: str | None = None
        self.held_back: str | None = None
        self.commands: list[dict[str, Any]] = []
        self.closed = False

    def send(self, cmd: dict[str, Any]) -> bool:
        self.commands.append(cmd)
        return True

    def close(self) -> None:
        self.closed = True


def line(seq: int, t: int, kind: str, **fields: Any) -> bytes:
    return json.dumps({"seq": seq, "t": t, "type": kind, **fields}).encode()


def hello(seq: int, t: int, boot: str = "b1", board: str = "brd") -> bytes:
    return line(seq, t, "hello", proto=1, fw="x", board=board, boot=boot)


START = "ffff00000000ffff"
OPERA = Path(__file__).resolve().parents[2] / "host" / "touchmove" / "data" / "opera-1858.pgn"


def make_bridge(tmp: Path, loop: asyncio.AbstractEventLoop, settle_ms: int = 50) -> Bridge:
    """A bridge on ``tmp``'s journal; one made before on that journal is taken as crashed (its lock released, as
    the kernel does when a process dies)."""
    cfg = BridgeConfig(MqttConfig(), SerialConfig(), settle_ms=settle_ms, journal=str(tmp / "j.sqlite3"))
    return open_bridge(cfg, loop)


def events_queued(bridge: Bridge) -> list[dict[str, Any]]:
    return [json.loads(m.payload) for m in bridge.mqtt._events]


def settle(loop: asyncio.AbstractEventLoop, seconds: float = 0.15) -> None:
    loop.run_until_complete(asyncio.sleep(seconds))


def play_e4(bridge: Bridge, link: FakeLink, loop: asyncio.AbstractEventLoop) -> None:
    bridge.ports.handle_lines(link, [hello(0, 5), line(1, 6, "snapshot", occ=START), line(2, 1000, "lift", sq="e2"),
                               line(3, 1100, "place", sq="e4")])
    settle(loop)


def test_lines_become_journaled_events_and_leds(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    kinds = [e["type"] for e in events_queued(bridge)]
    assert kinds == ["game_start", "touch", "move"]
    move = events_queued(bridge)[-1]
    assert move["uci"] == "e2e4" and move["seq"] == 3 and move["session"] == "test" and move["board"] == "brd"
    assert move["ts"].endswith("Z")
    assert bridge.pipeline.journal.event_count("brd") == 3
    assert {"cmd": "snapshot"} in link.commands
    assert {"cmd": "leds", "squares": ["e2", "e4"], "color": [0, 48, 0]} in link.commands
    state = json.loads(bridge.mqtt._retained["touchmove/boards/brd/state"]())  # type: ignore[operator]
    assert state["ply"] == 1 and state["last_move"] == "e2e4" and state["in_sync"] is True


def test_seq_gap_and_malformed_lines_ask_for_a_snapshot(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    bridge.ports.handle_lines(link, [hello(0, 5), line(1, 6, "snapshot", occ=START)])
    link.commands.clear()
    bridge.boards["brd"].last_snapshot_request = 0
    bridge.ports.handle_lines(link, [line(5, 900, "lift", sq="e2")])
    assert bridge.pipeline.stats["gaps"] == 1 and link.commands == [{"cmd": "snapshot"}]
    link.commands.clear()
    bridge.boards["brd"].last_snapshot_request = 0
    bridge.ports.handle_lines(link, [b"{garbage", None, line(6, 1000, "place", sq="e4")])
    assert bridge.pipeline.stats["malformed"] == 2 and link.commands[0] == {"cmd": "snapshot"}
    settle(loop)
    assert [e["uci"] for e in events_queued(bridge) if e["type"] == "move"] == ["e2e4"]


def checked_line(seq: int, t: int, kind: str, **fields: Any) -> bytes:
    """A line as the touchmove firmware writes it: its check ("ck") last."""
    middle = "".join(f",{json.dumps(k)}:{json.dumps(v)}" for k, v in fields.items())
    return add_check(f'{{"type":"{kind}"{middle},"seq":{seq},"t":{t}').encode()


def test_a_spliced_line_is_refused_counted_and_answered_with_a_snapshot(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    """Lines run together on the way (the port closed 10 s, TinyUSB's buffer overwritten) can make valid JSON with
    a plausible seq: a lift of e4 here, which would have been read as the start of a move. Its check fails: it is
    refused, counted, and the bridge asks for a snapshot; a line without a check from this board is refused too,
    until a hello says it restarted (into older firmware)."""
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    bridge.ports.handle_lines(link, [checked_line(0, 5, "hello", proto=1, fw="x", board="brd", boot="b1"),
                               checked_line(1, 6, "snapshot", occ=START)])
    link.commands.clear()
    bridge.boards["brd"].last_snapshot_request = 0
    a = checked_line(2, 900, "lift", sq="d2")
    b = checked_line(3, 1000, "place", sq="e4")
    spliced = a[:a.index(b'"sq"')] + b[b.index(b'"sq"'):]
    assert json.loads(spliced)["type"] == "lift" and json.loads(spliced)["sq"] == "e4"
    bridge.ports.handle_lines(link, [spliced])
    assert bridge.pipeline.stats["check_failed"] == 1 and bridge.pipeline.stats["malformed"] == 1
    assert link.commands == [{"cmd": "snapshot"}]
    bridge.ports.handle_lines(link, [line(4, 1100, "lift", sq="e2")])  # no check: cut on the way
    assert bridge.pipeline.stats["check_failed"] == 2
    bridge.ports.handle_lines(link, [checked_line(5, 1200, "lift", sq="e2"), checked_line(6, 1400, "place", sq="e4")])
    settle(loop)
    assert [e["uci"] for e in events_queued(bridge) if e["type"] == "move"] == ["e2e4"]
    assert not any(e.get("square") == "d2" for e in events_queued(bridge))
    bridge.ports.handle_lines(link, [hello(0, 5, boot="b2"), line(1, 6, "snapshot", occ=START)])  # older firmware
    assert bridge.pipeline.stats["check_failed"] == 2 and bridge.pipeline.stats["malformed"] == 1 + 1


def test_a_reboot_keeps_board_time_monotonic(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    before = bridge.boards["brd"].last_t
    bridge.ports.handle_lines(link, [hello(0, 3, boot="b2"), line(1, 4, "snapshot", occ="ffff00001000efff"),
                               line(2, 500, "lift", sq="e7"), line(3, 600, "place", sq="e5")])
    settle(loop)
    times = [e.t for e in bridge.pipeline.journal.entries("brd")]
    assert times == sorted(times) and times[-1] > before
    assert [e["uci"] for e in events_queued(bridge) if e["type"] == "move"] == ["e2e4", "e7e5"]


def test_resume_after_a_crash_publishes_only_what_was_not_acknowledged(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    bridge.ports.handle_lines(link, [line(4, 2000, "lift", sq="e7"), line(5, 2100, "place", sq="e5")])
    settle(loop)
    bridge.pipeline.acked("brd", 3)
    bridge.pipeline.flush()
    state = bridge.boards["brd"].engine.state()
    # kill -9: nothing else happens; a new daemon starts on the same journal
    again = make_bridge(tmp_path, loop)
    again.pipeline.restore()
    again.pipeline.flush()
    assert again.boards["brd"].engine.state() == state
    assert [e["seq"] for e in events_queued(again)] == [4, 5]
    # the board comes back (same boot) and goes on: seq continues, no duplicate
    link2 = FakeLink("/dev/fake1")
    again.ports.handle_lines(link2, [hello(6, 2500), line(7, 3000, "lift", sq="g1"), line(8, 3100, "place", sq="f3")])
    settle(loop)
    moves = [e["uci"] for e in events_queued(again) if e["type"] == "move"]
    assert moves == ["e7e5", "g1f3"]
    assert again.pipeline.stats["gaps"] == 0


def test_lines_buffered_before_hello_are_kept(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    # the daemon restarts; the port holds lines the board wrote meanwhile, then the hello reply
    again = make_bridge(tmp_path, loop)
    again.pipeline.restore()
    link2 = FakeLink("/dev/fake1")
    again.ports.pending_lines[link2] = []
    again.ports.handle_lines(link2, [line(3, 1100, "place", sq="e4"), line(4, 2000, "lift", sq="e7"),
                               line(5, 2100, "place", sq="e5"), hello(6, 2500)])
    settle(loop)
    moves = [e["uci"] for e in events_queued(again) if e["type"] == "move"]
    assert moves == ["e2e4", "e7e5"]     # e2e4 was never acknowledged; e7e5 came from the buffered lines


# -- MQTT commands ----------------------------------------------------------------------------------------------
def command(bridge: Bridge, loop: asyncio.AbstractEventLoop, topic: str, payload: bytes,
            retained: bool = False) -> dict[str, Any]:
    bridge.mqtt._replies.clear()
    loop.run_until_complete(bridge.on_command(topic, payload, retained))
    replies: list[Outgoing] = list(bridge.mqtt._replies)
    assert len(replies) == 1, replies
    return {"topic": replies[0].topic, **json.loads(replies[0].payload)}


def test_valid_board_commands(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    play_e4(bridge, FakeLink(), loop)
    topic = "touchmove/boards/brd/set"
    r = command(bridge, loop, topic, b'{"command":"assign","white":"Morphy","black":"Duke","round":"1",'
                                     b'"transaction":"t1"}')
    assert r == {"topic": "touchmove/boards/brd/response", "status": "ok", "command": "assign",
                 "transaction": "t1"}
    assert '[White "Morphy"]' in bridge.publisher.pgn_text(bridge.boards["brd"])
    assert command(bridge, loop, topic, b'{"command":"takeback","ply":1}')["status"] == "ok"
    settle(loop)
    assert any(e["type"] == "takeback" for e in events_queued(bridge))
    fen = "8/8/8/8/8/8/4K3/6k1 w - - 0 1"
    assert command(bridge, loop, topic, json.dumps({"command": "setup", "fen": fen}).encode())["status"] == "ok"
    sources = [e.source for e in bridge.pipeline.journal.entries("brd")]
    assert sources.count("operator") == 3     # takeback, setup and the assign metadata


def test_resync_command(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    """``resync`` feeds a journaled resync record; one the engine cannot apply is answered with its reason."""
    bridge = make_bridge(tmp_path, loop)
    play_e4(bridge, FakeLink(), loop)
    topic = "touchmove/boards/brd/set"
    r = command(bridge, loop, topic, b'{"command":"resync","moves":["Nf3"],"transaction":"r1"}')
    assert r["status"] == "error" and "not legal" in r["error"] and r["transaction"] == "r1"
    assert any(e["type"] == "resync_rejected" for e in events_queued(bridge))
    r = command(bridge, loop, topic, b'{"command":"resync","moves":[]}')
    assert r["status"] == "ok", r
    r = command(bridge, loop, topic, b'{"command":"resync","moves":"e4"}')
    assert r["status"] == "error" and "'moves'" in r["error"]
    r = command(bridge, loop, topic, b'{"command":"resync"}')
    assert r["status"] == "error" and "either" in r["error"]
    journaled = [e.body or "" for e in bridge.pipeline.journal.entries("brd") if e.source == "operator"]
    assert sum('"type":"resync"' in line for line in journaled) == 2


def test_result_command(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    """``result`` feeds a journaled result record: the game ends in the events, the state and the PGN."""
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    topic = "touchmove/boards/brd/set"
    r = command(bridge, loop, topic, b'{"command":"result","result":"2-0","reason":"resignation"}')
    assert r["status"] == "error" and "'result' must be one of" in r["error"]
    r = command(bridge, loop, topic, b'{"command":"result","result":"1-0"}')
    assert r["status"] == "error" and "'reason'" in r["error"]
    r = command(bridge, loop, topic, b'{"command":"result","result":"1-0","reason":"resignation","transaction":2}')
    assert r == {"topic": "touchmove/boards/brd/response", "status": "ok", "command": "result", "transaction": 2}
    settle(loop)
    ends = [e for e in events_queued(bridge) if e["type"] == "game_end"]
    assert [(e["result"], e["reason"], e["by"]) for e in ends] == [("1-0", "resignation", "arbiter")]
    sess = bridge.boards["brd"]
    assert bridge.publisher.state_payload(sess)["game_over"] is True
    assert ('[Result "1-0"]' in bridge.publisher.pgn_text(sess)
            and '[Termination "resignation"]' in bridge.publisher.pgn_text(sess))
    journaled = [e.body or "" for e in bridge.pipeline.journal.entries("brd") if e.source == "operator"]
    assert sum('"type":"result"' in line for line in journaled) == 1
    # The board saw no mate: a second declaration (an arbiter's correction) replaces the first.
    r = command(bridge, loop, topic, b'{"command":"result","result":"0-1","reason":"time"}')
    assert r["status"] == "ok"
    assert '[Result "0-1"]' in bridge.publisher.pgn_text(sess)
    # Play goes on on the board: the declared result is withdrawn, in the events and the PGN.
    t = sess.now(bridge.clock.monotonic()) + 1000
    bridge.ports.handle_lines(link, [line(4, t, "lift", sq="e7"), line(5, t + 100, "place", sq="e5"),
                                     line(6, t + 2000, "heartbeat", occ=records.format_occupancy(
                                         sess.engine.state().occupancy & ~chess.BB_E7 | chess.BB_E5))])
    settle(loop, 0.5)
    kinds = [e["type"] for e in events_queued(bridge)]
    assert kinds[-2:] == ["game_resumed", "move"], kinds
    assert ('[Result "*"]' in bridge.publisher.pgn_text(sess)
            and bridge.publisher.state_payload(sess)["game_over"] is False)


def test_bridge_requests(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    bridge.boards["brd"].link = link  # type: ignore[assignment]
    r = command(bridge, loop, "touchmove/bridge/request/health_check", b"")
    assert r["status"] == "ok" and r["data"]["healthy"] is True
    r = command(bridge, loop, "touchmove/bridge/request/boards", b'{"transaction":7}')
    assert r["data"]["boards"][0]["board"] == "brd" and r["transaction"] == 7
    link.commands.clear()
    r = command(bridge, loop, "touchmove/bridge/request/leds", b'{"board":"brd","squares":["a1"],"color":[1,2,3]}')
    assert r["status"] == "ok" and link.commands == [{"cmd": "leds", "squares": ["a1"], "color": [1, 2, 3]}]
    r = command(bridge, loop, "touchmove/bridge/request/nope", b"{}")
    assert r["status"] == "error" and "unknown request" in r["error"]


json_scalars = st.none() | st.booleans() | st.integers(-3, 10**6) | st.text(max_size=12) | st.floats(allow_nan=False)
json_any = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) |
                        st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
board_payloads = st.fixed_dictionaries({}, optional={
    "command": st.sampled_from(["new_game", "setup", "promote", "takeback", "assign", "resync", "result", "resign", ""])
    | json_any,
    "fen": st.sampled_from([chess.STARTING_FEN, "8/8/8/8/8/8/8/8 w - - 0 1", "garbage"]) | json_any,
    "chess960": json_any, "piece": st.sampled_from(["q", "n", "k", "Q"]) | json_any,
    "ply": st.integers(-2, 20_000) | json_any, "white": json_any, "transaction": json_any, "extra": json_any,
})
request_payloads = st.fixed_dictionaries({}, optional={
    "board": st.sampled_from(["brd", "other"]) | json_any, "squares": st.lists(st.sampled_from(["e4", "z9"])) |
    json_any, "color": json_any, "clear": json_any, "transaction": json_any})
raw_payloads = st.one_of(st.binary(max_size=200), board_payloads.map(lambda d: json.dumps(d).encode()),
                         request_payloads.map(lambda d: json.dumps(d).encode()), st.just(b"x" * 5000))
topics = st.sampled_from(["touchmove/boards/brd/set", "touchmove/boards/ghost/set",
                          *(f"touchmove/bridge/request/{c}" for c in
                            ("health_check", "boards", "snapshot", "leds", "restart", ""))])


def test_every_command_topic_fuzzed(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    play_e4(bridge, FakeLink(), loop)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(topics, raw_payloads, st.booleans())
    def check(topic: str, payload: bytes, retained: bool) -> None:
        entries = len(list(bridge.pipeline.journal.entries("brd")))
        state = bridge.boards["brd"].engine.state()
        headers = dict(bridge.boards["brd"].headers)
        reply = command(bridge, loop, topic, payload, retained)
        assert reply["status"] in ("ok", "error")
        assert reply["topic"].endswith("/response") or "/response/" in reply["topic"]
        if reply["status"] == "error":
            assert isinstance(reply["error"], str) and reply["error"]
            assert len(list(bridge.pipeline.journal.entries("brd"))) == entries
            assert bridge.boards["brd"].engine.state() == state
            assert bridge.boards["brd"].headers == headers
        if retained:
            assert reply["status"] == "error"

    check()


# -- hardening (issue 9) ------------------------------------------------------------------------------------------
def moves_queued(bridge: Bridge) -> list[str]:
    return [e["uci"] for e in events_queued(bridge) if e["type"] == "move"]


def journal_moves(path: Path, board: str = "brd") -> list[str]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT payload FROM events WHERE board = ? ORDER BY seq", (board,)).fetchall()
    return [json.loads(p)["uci"] for (p,) in rows if json.loads(p)["type"] == "move"]


def bridge_state(bridge: Bridge) -> dict[str, Any]:
    payload = bridge.mqtt._retained.get("touchmove/bridge/state")
    return json.loads(payload() if callable(payload) else payload) if payload else {}


def test_an_out_of_range_line_is_an_error_and_changes_nothing(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    sess = bridge.boards["brd"]
    before = (sess.engine.state(), sess.last_seq, sess.last_t, sess.t_offset,
              len(list(bridge.pipeline.journal.entries("brd"))))
    bad = [line(4, 10**20, "lift", sq="e7"), line(10**20, 1200, "lift", sq="e7"),
           line(4, 1200, "clock", side="white", remaining=10**20), line(4, 2**63, "snapshot", occ=START),
           line(4, 1200, "snapshot", occ="-1")]
    caplog.clear()
    link.commands.clear()
    sess.last_snapshot_request = 0
    bridge.ports.handle_lines(link, bad[:4])
    assert link.commands == []                       # not even a snapshot request
    bridge.ports.handle_lines(link, bad[4:])               # a malformed occupancy: a snapshot request, as before
    assert link.commands == [{"cmd": "snapshot"}]
    settle(loop)
    errors = [r for r in caplog.records if r.levelname == "ERROR" and "out-of-range" in r.getMessage()]
    assert len(errors) == 4 and bridge.pipeline.stats["out_of_range"] == 4 and bridge.pipeline.stats["malformed"] == 5
    after = (sess.engine.state(), sess.last_seq, sess.last_t, sess.t_offset,
             len(list(bridge.pipeline.journal.entries("brd"))))
    assert after == before
    bridge.ports.handle_lines(link, [line(4, 2000, "lift", sq="e7"), line(5, 2100, "place", sq="e5")])
    settle(loop)
    assert moves_queued(bridge) == ["e2e4", "e7e5"]
    assert journal_moves(tmp_path / "j.sqlite3") == ["e2e4", "e7e5"]


def test_time_running_backwards_within_a_boot_is_logged_and_absorbed(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    caplog.clear()
    # the same boot goes on with a clock 900 ms behind, then 2**39 ms ahead: both are jumps
    bridge.ports.handle_lines(link, [line(4, 200, "lift", sq="e7"), line(5, 300, "place", sq="e5")])
    settle(loop)
    bridge.ports.handle_lines(link, [line(6, 2**39, "lift", sq="g1"), line(7, 2**39 + 100, "place", sq="f3")])
    settle(loop)
    bridge.ports.handle_lines(link, [line(8, 2**39 + 900, "lift", sq="b8"), line(9, 2**39 + 1000, "place", sq="c6")])
    settle(loop)
    assert moves_queued(bridge) == ["e2e4", "e7e5", "g1f3", "b8c6"]
    assert bridge.pipeline.stats["time_jumps"] == 2
    assert sum("ran backwards" in r.getMessage() for r in caplog.records) == 1
    assert sum("ahead" in r.getMessage() for r in caplog.records) == 1
    times = [e.t for e in bridge.pipeline.journal.entries("brd")]
    assert times == sorted(times) and times[-1] < 10**6        # monotonic, and no jump into the far future
    assert len(set(times[-4:])) == 4                           # the records after the jumps keep their spacing


class FlakyDb:
    """The journal's connection, failing every COMMIT with ``fail`` while it is set."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.fail: Exception | None = None

    def execute(self, sql: str, params: Any = ()) -> Any:
        if self.fail is not None and sql == "COMMIT":
            raise self.fail
        return self.db.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def test_a_journal_write_error_holds_events_reports_and_recovers(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_faults, "JOURNAL_RETRY_S", 0.1)
    bridge = make_bridge(tmp_path, loop)
    flaky = FlakyDb(bridge.pipeline.journal.db)
    bridge.pipeline.journal.db = flaky  # type: ignore[assignment]
    link = FakeLink()
    play_e4(bridge, link, loop)
    flaky.fail = sqlite3.OperationalError("disk I/O error")
    bridge.ports.handle_lines(link, [line(4, 2000, "lift", sq="e7"), line(5, 2100, "place", sq="e5")])
    settle(loop)
    assert moves_queued(bridge) == ["e2e4", "e7e5"]               # published from memory meanwhile
    assert journal_moves(tmp_path / "j.sqlite3") == ["e2e4"]
    assert not bridge.pipeline.journal.db.in_transaction                   # rolled back, not stuck in a transaction
    health = command(bridge, loop, "touchmove/bridge/request/health_check", b"")["data"]
    assert health["healthy"] is False and health["journal"]["error"] == "disk I/O error"
    assert health["journal"]["held_writes"] > 0
    assert bridge_state(bridge)["problems"][0]["code"] == "journal_write_failed"
    assert bridge_state(bridge)["problems"][0]["reason"] == "disk I/O error"
    settle(loop, 0.3)                                             # retries fail too
    assert bridge.pipeline.journal.fault is not None and bridge.pipeline.journal.fault.failures >= 2
    flaky.fail = None
    bridge.ports.handle_lines(link, [line(6, 3000, "lift", sq="g1"), line(7, 3100, "place", sq="f3")])
    settle(loop, 0.3)
    assert journal_moves(tmp_path / "j.sqlite3") == ["e2e4", "e7e5", "g1f3"]
    assert bridge.pipeline.journal.fault is None and bridge.pipeline.journal.held == 0
    assert bridge_state(bridge) == {"state": "online"}
    assert command(bridge, loop, "touchmove/bridge/request/health_check", b"")["data"]["healthy"] is True
    state = bridge.boards["brd"].engine.state()
    again = make_bridge(tmp_path, loop)
    again.pipeline.restore()
    assert again.boards["brd"].engine.state() == state


def test_a_full_disk_is_a_fault_until_space_comes_back(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_faults, "JOURNAL_RETRY_S", 0.1)
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    db = bridge.pipeline.journal.db
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")                # the file cannot grow: SQLITE_FULL
    shuffle = [("e7", "e5"), ("g1", "f3"), ("g8", "f6"), ("f3", "g1"), ("f6", "g8")] + [
        ("g1", "f3"), ("g8", "f6"), ("f3", "g1"), ("f6", "g8")] * 40      # knights out and back
    lines, seq, t = [], 4, 2000
    for a, b in shuffle:
        lines += [line(seq, t, "lift", sq=a), line(seq + 1, t + 100, "place", sq=b)]
        seq, t = seq + 2, t + 1000
    bridge.ports.handle_lines(link, lines)                              # each lift settles the move before it
    settle(loop, 0.2)
    fault = bridge.pipeline.journal.fault
    assert fault is not None and "full" in fault.reason
    published = moves_queued(bridge)                              # up to the fivefold repetition (9.6.1)
    assert len(published) >= 15 and len(journal_moves(tmp_path / "j.sqlite3")) < len(published)
    db.execute("PRAGMA max_page_count = 1000000")                 # space again
    settle(loop, 0.3)
    assert bridge.pipeline.journal.fault is None
    assert journal_moves(tmp_path / "j.sqlite3") == moves_queued(bridge)


def test_over_the_bound_records_are_given_up_for_a_checkpoint_and_nothing_else_is_lost(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_faults, "JOURNAL_RETRY_S", 0.1)
    monkeypatch.setattr(journal_faults, "MAX_HELD_WRITES", 12)
    bridge = make_bridge(tmp_path, loop)
    flaky = FlakyDb(bridge.pipeline.journal.db)
    bridge.pipeline.journal.db = flaky  # type: ignore[assignment]
    link = FakeLink()
    play_e4(bridge, link, loop)
    flaky.fail = sqlite3.OperationalError("database or disk is full")
    seq, t = 4, 2000
    for a, b in [("e7", "e5"), ("g1", "f3"), ("b8", "c6"), ("f1", "b5")]:
        bridge.ports.handle_lines(link, [line(seq, t, "lift", sq=a), line(seq + 1, t + 100, "place", sq=b)])
        seq, t = seq + 2, t + 1000
        settle(loop, 0.1)
        bridge.pipeline.acked("brd", bridge.boards["brd"].event_seq)    # the broker took them
    assert bridge.pipeline.journal_faults.loss["records_not_journaled"] > 0
    assert bridge.pipeline.journal.held <= 12 + 8
    problems = {p["code"]: p for p in bridge_state(bridge)["problems"]}
    assert (problems["journal_incomplete"]["records_not_journaled"]
            == bridge.pipeline.journal_faults.loss["records_not_journaled"])
    flaky.fail = None
    settle(loop, 0.3)
    assert bridge.pipeline.journal.fault is None
    want = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]
    assert moves_queued(bridge) == want
    state = bridge.boards["brd"].engine.state()
    again = make_bridge(tmp_path, loop)
    again.pipeline.restore()                                    # from the checkpoint: the records are not needed
    assert again.boards["brd"].engine.state() == state
    assert [m.uci() for m in again.boards["brd"].engine.games[-1].moves] == want
    assert recording_gaps(again.pipeline.journal, "brd") == bridge.pipeline.journal_faults.loss["records_not_journaled"]
    assert [m.uci() for m in pgn_games(again.pipeline.journal, "brd")[-1].mainline_moves()] == want


def test_a_hello_with_another_id_keeps_the_port_and_alerts_once(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    for seq in (4, 5):
        bridge.ports.handle_lines(link, [hello(seq, 1500, board="intruder")])
    bridge.ports.handle_lines(link, [line(6, 2000, "lift", sq="e7"), line(7, 2100, "place", sq="e5")])
    settle(loop)
    alerts = [e for e in events_queued(bridge) if e["type"] == "alert" and e["code"] == "board_identity"]
    assert len(alerts) == 1 and alerts[0]["board"] == "brd" and alerts[0]["origin"] == "bridge"
    assert alerts[0]["detail"]["claimed"] == "intruder" and alerts[0]["detail"]["bound"] == "brd"
    assert link.board == "brd" and "intruder" not in bridge.boards and not link.closed
    assert moves_queued(bridge) == ["e2e4", "e7e5"]
    assert bridge_state(bridge)["problems"][0]["code"] == "board_identity"
    bridge.ports.handle_closed(link, "unplugged")              # the operator replugs: the conflict is gone
    assert bridge_state(bridge) == {"state": "online"}


def test_two_ports_with_one_id_do_not_flap_and_the_second_takes_over_when_the_first_closes(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    first, second = FakeLink("/dev/fake0"), FakeLink("/dev/fake1")
    bridge.ports.pending_lines[second] = []
    play_e4(bridge, first, loop)
    after_e4 = "ffff00001000efff"
    for seq in range(0, 6, 2):     # the board on the second port answers every hello with a snapshot
        bridge.ports.handle_lines(second, [hello(seq, 10 + seq, boot="b2"),
                                     line(seq + 1, 11 + seq, "snapshot", occ=after_e4)])
    settle(loop)
    alerts = [e for e in events_queued(bridge) if e["type"] == "alert" and e["code"] == "board_identity"]
    assert len(alerts) == 1 and alerts[0]["detail"]["held_by"] == "/dev/fake0"
    assert bridge.boards["brd"].link is first and not first.closed and second.held_back == "brd"
    assert second.board is None and moves_queued(bridge) == ["e2e4"]
    # the first port goes away (the board really moved): the held-back port is asked for a hello and takes over
    bridge.ports.handle_closed(first, "unplugged")  # type: ignore[arg-type]
    assert {"cmd": "hello"} in second.commands
    bridge.ports.handle_lines(second, [hello(6, 3000, boot="b2"), line(7, 3500, "lift", sq="e7"),
                                 line(8, 3600, "place", sq="e5")])
    settle(loop)
    assert bridge.boards["brd"].link is second and moves_queued(bridge) == ["e2e4", "e7e5"]


def test_a_restart_replays_only_what_follows_the_checkpoint(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    bridge.ports.handle_lines(link, [line(4, 2000, "lift", sq="e7"), line(5, 2100, "place", sq="e5")])
    settle(loop)
    bridge.pipeline.checkpoint(bridge.boards["brd"])
    bridge.ports.handle_lines(link, [line(6, 3000, "lift", sq="g1"), line(7, 3100, "place", sq="f3")])
    settle(loop)
    bridge.pipeline.flush()
    state = bridge.boards["brd"].engine.state()
    replayed: list[Any] = []
    original = Journal.entries

    def counting(self: Journal, board: str, after: int = 0) -> Any:
        for entry in original(self, board, after):
            replayed.append(entry)
            yield entry

    monkeypatch.setattr(Journal, "entries", counting)
    again = make_bridge(tmp_path, loop)
    again.pipeline.restore()
    assert again.boards["brd"].engine.state() == state
    kinds = [e.kind for e in replayed]
    assert kinds.count("record") == 2 and set(kinds) == {"record", "advance"}    # g1 lifted, f3 placed, timers
    assert len(kinds) < len(list(original(again.pipeline.journal, "brd"))) / 2
    assert again.boards["brd"].event_seq == bridge.boards["brd"].event_seq
    monkeypatch.setattr(Journal, "entries", original)
    full, produced, _ = replay_entries(again.pipeline.journal, "brd", 50, use_checkpoint=False)
    assert full.state() == state and produced == bridge.boards["brd"].event_seq


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10**6), cut=st.floats(0.05, 0.95))
def test_a_checkpointed_engine_goes_on_exactly_like_the_original(seed: int, cut: float) -> None:
    with open(OPERA) as fh:
        game = chess.pgn.read_game(fh)
    assert game is not None
    player = hands.Hands(random.Random(seed), hands.Style(), t=1000)
    hands.play(game.board(), list(game.mainline_moves()), player)
    recs = player.records
    split = int(len(recs) * cut)
    engine = Engine()
    for rec in recs[:split]:
        engine.feed(rec)
    key = checkpoint.CheckpointKey(b"k" * 32, "test")
    state = checkpoint.dump(engine)
    code = checkpoint.fingerprint()
    copy = checkpoint.load(key, "b", code, engine.settle_ms, 0, state, key.sign("b", code, engine.settle_ms, 0, state))
    for rec in recs[split:]:
        assert [e.to_dict() for e in copy.feed(rec)] == [e.to_dict() for e in engine.feed(rec)]
    assert [e.to_dict() for e in copy.finish()] == [e.to_dict() for e in engine.finish()]
    assert copy.state() == engine.state()


def test_lines_arriving_after_a_settle_timer_keep_their_spacing(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)                     # e4 placed at 1100; the settle timer advanced past 1150
    assert bridge.boards["brd"].last_t >= 1150
    # stamped 1120 and 1300 but delivered only now (a busy host): the second stays 180 ms after the first
    bridge.ports.handle_lines(link, [line(4, 1120, "lift", sq="e7"), line(5, 1300, "place", sq="e5")])
    settle(loop)
    recs = [e for e in bridge.pipeline.journal.entries("brd") if e.kind == "record"]
    assert recs[-1].t - recs[-2].t == 180
    assert moves_queued(bridge) == ["e2e4", "e7e5"] and bridge.pipeline.stats["time_jumps"] == 0


def test_a_real_board_read_late_then_quickly_keeps_its_settle_time(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    """Issue 9, demo stall: the bridge used to guess a board's clock rate from when its lines arrived. A real
    board whose lines are read late and then quickly (the host catching up after a stall: here 2 device s per
    host s for 6.5 s) looked twice as fast, and for seconds afterwards its settle timers fired after half the
    settle time: a knight resting 150 ms on f3 on its way to h3 was committed as Nf3. The rate now comes from
    the board's hello (a simulation says ``rate``), never from arrival times."""
    bridge = make_bridge(tmp_path, loop, settle_ms=200)
    link = FakeLink()
    bridge.ports.handle_lines(link, [hello(0, 5), line(1, 6, "snapshot", occ=START)])
    start, seq = loop.time(), 2          # the host's time is the loop's (virtual: see conftest.loop)

    def host_ms() -> int:
        return int((loop.time() - start) * 1000)

    while host_ms() < 6500:                   # heartbeats about every 100 host ms, device time running 2x
        bridge.ports.handle_lines(link, [line(seq, 1000 + 2 * host_ms(), "heartbeat", occ=START)])
        seq += 1
        settle(loop, 0.1)
    assert bridge.boards["brd"].rate == 1.0
    base = 1000 + 2 * host_ms() - host_ms()   # caught up: device ms = host ms from here on
    for kind, sq, rest in [("lift", "g1", 0.05), ("place", "f3", 0.15), ("lift", "f3", 0.1), ("place", "h3", 0.5)]:
        bridge.ports.handle_lines(link, [line(seq, base + host_ms(), kind, sq=sq)])
        seq += 1
        settle(loop, rest)
    assert moves_queued(bridge) == ["g1h3"]
    assert not [e for e in events_queued(bridge) if e["type"] in ("move_amended", "alert")]


def test_a_simulation_says_its_clock_rate_in_its_hello(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    bridge.ports.handle_lines(link, [line(0, 5, "hello", proto=1, fw="x", board="brd", boot="b1", rate=20),
                               line(1, 6, "snapshot", occ=START)])
    assert bridge.boards["brd"].rate == 20.0
    bridge.ports.handle_lines(link, [line(2, 10, "hello", proto=1, fw="x", board="brd", boot="b1", rate=5000)])
    assert bridge.boards["brd"].rate == 20.0 and bridge.pipeline.stats["out_of_range"] == 1     # an implausible rate
    bridge.ports.handle_lines(link, [hello(3, 20)])             # a hello without a rate: a real board's clock
    assert bridge.boards["brd"].rate == 1.0


# -- issue 21: ids, operator records, USB serial numbers, smaller items -------------------------------------------
def test_a_refused_board_id_is_a_problem_until_its_port_closes_and_binds_nothing(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    bad = FakeLink("/dev/fake9")
    bridge.ports.pending_lines[bad] = []
    for seq in (0, 2):
        bridge.ports.handle_lines(bad, [hello(seq, 5, board="hall\tA"), line(seq + 1, 6, "snapshot", occ=START)])
    play_e4(bridge, FakeLink(), loop)
    assert sorted(bridge.boards) == ["brd"] and bad.board is None
    problems = bridge_state(bridge)["problems"]
    assert [p["code"] for p in problems] == ["board_id_refused"] and bridge.admission.problems()[0]["count"] == 2
    assert "'hall\\tA'" in problems[0]["message"] and problems[0]["port"] == "/dev/fake9"
    assert moves_queued(bridge) == ["e2e4"]
    bridge.ports.handle_closed(bad, "unplugged")  # type: ignore[arg-type]
    assert bridge_state(bridge) == {"state": "online"}


def test_operator_records_from_a_port_change_nothing_and_are_reported(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    bridge.ports.handle_lines(link, [line(4, 1500, "result", result="0-1", reason="resignation"),
                               line(5, 1600, "takeback", ply=1), line(6, 1700, "setup", fen=chess.STARTING_FEN)])
    settle(loop)
    assert moves_queued(bridge) == ["e2e4"]
    assert not any(e["type"] in ("game_end", "takeback", "game_start") for e in events_queued(bridge)
                   if e["seq"] > 2)
    assert bridge.pipeline.stats["operator_records_refused"] == 3
    assert [e.source for e in bridge.pipeline.journal.entries("brd")].count("operator") == 0
    assert [p["code"] for p in bridge_state(bridge)["problems"]] == ["operator_record_refused"]


def test_a_board_on_a_port_with_another_usb_serial_number_is_an_alert(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    cfg = BridgeConfig(MqttConfig(), SerialConfig(), settle_ms=50, journal=str(tmp_path / "j.sqlite3"),
                       board_serials={"brd": "SN-1"})
    bridge = Bridge(cfg, session="test")
    bridge.open()
    bridge.pipeline.loop = loop
    serials = {"/dev/fake0": "SN-1", "/dev/fake1": "SN-2"}
    bridge.admission.serial_of = serials.get
    play_e4(bridge, FakeLink("/dev/fake0"), loop)
    assert "problems" not in bridge_state(bridge)
    assert bridge.boards["brd"].firmware == "x"
    bridge.ports.handle_closed(bridge.boards["brd"].link, "unplugged")  # type: ignore[arg-type]
    other = FakeLink("/dev/fake1")
    bridge.ports.handle_lines(other, [hello(0, 5, boot="b2")])
    settle(loop)
    alerts = [e for e in events_queued(bridge) if e["type"] == "alert" and e["code"] == "board_serial_changed"]
    assert len(alerts) == 1 and alerts[0]["detail"]["found"] == "SN-2" and alerts[0]["detail"]["expected"] == "SN-1"
    assert [p["code"] for p in bridge_state(bridge)["problems"]] == ["board_serial_changed"]
    back = FakeLink("/dev/fake0")
    bridge.ports.handle_closed(other, "unplugged")  # type: ignore[arg-type]
    bridge.ports.handle_lines(back, [hello(0, 5, boot="b3")])
    assert bridge_state(bridge) == {"state": "online"}


def test_a_journal_holding_an_id_that_breaks_the_rule_resumes_the_others_only(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    play_e4(bridge, FakeLink(), loop)
    bridge.pipeline.journal.close()
    with sqlite3.connect(tmp_path / "j.sqlite3") as db:      # written by a bridge before the id rule
        db.execute("INSERT INTO boards(board) VALUES ('bad\tid')")
        db.execute("INSERT INTO events(board, seq, game, type, payload) VALUES ('bad\tid', 1, 1, 'touch', '{}')")
    again = make_bridge(tmp_path, loop)
    again.pipeline.restore()
    assert sorted(again.boards) == ["brd"]
    assert not any("\t" in topic for topic in again.mqtt._retained)
    assert [p["code"] for p in bridge_state(again)["problems"]] == ["journal_board_refused"]


def test_commands_naming_a_bad_id_or_nested_deep_get_a_clear_answer_or_none(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    play_e4(bridge, FakeLink(), loop)
    bridge.mqtt._replies.clear()
    loop.run_until_complete(bridge.on_command("touchmove/boards/b\tx/set", b'{"command":"new_game"}', False))
    assert not bridge.mqtt._replies           # no reply on a topic the broker may refuse
    deep = b"[" * 2000 + b"]" * 2000
    for topic in ("touchmove/boards/brd/set", "touchmove/bridge/request/boards"):
        r = command(bridge, loop, topic, deep)
        assert r["status"] == "error" and "nested 2000 levels" in r["error"]
    r = command(bridge, loop, "touchmove/bridge/request/snapshot", b'{"board":"a\\u0000b"}')
    assert r["status"] == "error" and "board id" in r["error"]


def test_a_chess960_setup_accepted_live_is_replayed_the_same(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    play_e4(bridge, FakeLink(), loop)
    fen = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
    r = command(bridge, loop, "touchmove/boards/brd/set", json.dumps({"command": "setup", "fen": fen}).encode())
    assert r["status"] == "error" and "FEN" in r["error"]       # chess960 rights without the flag: refused live
    r = command(bridge, loop, "touchmove/boards/brd/set",
                json.dumps({"command": "setup", "fen": fen, "chess960": True}).encode())
    assert r["status"] == "ok"
    bridge.pipeline.flush()
    engine, _, _ = replay_entries(bridge.pipeline.journal, "brd", 50, use_checkpoint=False)
    assert [e.body for e in bridge.pipeline.journal.entries("brd") if e.source == "operator"] == [
        records.to_line(records.Setup(json.loads(e.body)["t"], fen, True))
        for e in bridge.pipeline.journal.entries("brd") if e.source == "operator"]
    assert engine.state().game == bridge.boards["brd"].engine.state().game


def test_a_second_bridge_on_one_journal_refuses_naming_the_first(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    import os

    from touchmove.bridge.journal_lock import JournalLocked

    first = make_bridge(tmp_path, loop)
    cfg = BridgeConfig(MqttConfig(), SerialConfig(), settle_ms=50, journal=str(tmp_path / "j.sqlite3"))
    with pytest.raises(JournalLocked, match=f"in use by another bridge \\(process {os.getpid()} on .*session test"):
        Bridge(cfg, session="second").open()
    assert oct((tmp_path / "j.sqlite3.lock").stat().st_mode & 0o777) == "0o600"
    first.pipeline.journal_lock.release()
    third = Bridge(cfg, session="third")
    third.open()
    third.pipeline.journal_lock.release()


def test_making_a_bridge_opens_nothing_open_does_and_close_lets_go(tmp_path: Path) -> None:
    cfg = BridgeConfig(MqttConfig(), SerialConfig(), settle_ms=50, journal=str(tmp_path / "j.sqlite3"))
    bridge = Bridge(cfg, session="test")
    assert sorted(p.name for p in tmp_path.iterdir()) == []           # no journal, no lock, no seq floor yet
    bridge.open()
    assert {"j.sqlite3", "j.sqlite3.lock", "j.sqlite3-seqs"} <= {p.name for p in tmp_path.iterdir()}
    assert bridge.pipeline.journal.boards() == []
    bridge.close()
    bridge.close()                                 # once is enough: a second close does nothing

    async def in_context() -> list[str]:
        async with Bridge(cfg, session="again") as again:      # the lock was released: another bridge opens it
            return [row.board for row in again.pipeline.journal.boards()]

    assert asyncio.run(in_context()) == []
    third = Bridge(cfg, session="third")           # and the context let it go
    third.open()
    third.close()


def test_client_ids_are_unique_per_process_and_keep_the_configured_prefix() -> None:
    from touchmove.bridge.mqtt_link import client_id

    cfg = MqttConfig(client_id="bridge-hall-a", username="hall-a")
    ids = {client_id(cfg) for _ in range(50)}
    assert len(ids) == 50 and all(i.startswith("bridge-hall-a-hall-a-") for i in ids)
    assert client_id(MqttConfig()).startswith("touchmove-bridge-")


def test_a_crash_while_the_journal_cannot_write_never_reuses_a_published_seq(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_faults, "JOURNAL_RETRY_S", 0.1)
    bridge = make_bridge(tmp_path, loop)
    flaky = FlakyDb(bridge.pipeline.journal.db)
    bridge.pipeline.journal.db = flaky  # type: ignore[assignment]
    link = FakeLink()
    play_e4(bridge, link, loop)
    journaled = bridge.pipeline.journal.event_count("brd")
    flaky.fail = sqlite3.OperationalError("database or disk is full")
    bridge.ports.handle_lines(link, [line(4, 2000, "lift", sq="e7"), line(5, 2100, "place", sq="e5")])
    settle(loop)
    published = events_queued(bridge)
    top = max(e["seq"] for e in published)
    assert moves_queued(bridge) == ["e2e4", "e7e5"] and top > journaled
    assert bridge.pipeline.seq_floor.floor("brd") >= top            # recorded before it was offered
    # kill -9: nothing more is written; the restart resumes from the journal (e2e4) and goes on past ``top``
    again = make_bridge(tmp_path, loop)
    again.pipeline.restore()
    again.pipeline.flush()
    sess = again.boards["brd"]
    assert sess.engine.state().ply == 1 and sess.event_seq == top + 1
    after = events_queued(again)
    alert = [e for e in after if e["type"] == "alert"]
    assert alert[-1]["code"] == "events_not_journaled" and alert[-1]["seq"] == top + 1
    assert alert[-1]["detail"]["first_seq"] == journaled + 1 and alert[-1]["detail"]["last_seq"] == top
    assert all(e["seq"] <= journaled or e["seq"] > top for e in after)
    # the board's snapshot shows e7-e5 made: recovered, with seqs never used before
    link2 = FakeLink()
    again.ports.handle_lines(link2, [hello(6, 2500), line(7, 2600, "snapshot", occ="ffef00101000efff")])
    settle(loop, 0.3)
    later = [e for e in events_queued(again) if e["seq"] > top]
    assert [e["uci"] for e in later if e["type"] == "move"] == ["e7e5"]
    seqs = [e["seq"] for e in events_queued(again)]
    assert len(seqs) == len(set(seqs))


def test_a_damaged_journal_is_set_aside_and_a_new_one_started(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    top = bridge.boards["brd"].event_seq
    bridge.pipeline.flush()
    bridge.pipeline.journal.close()
    path = tmp_path / "j.sqlite3"
    data = bytearray(path.read_bytes())
    data[100:len(data)] = b"\xa5" * (len(data) - 100)              # pages overwritten: "malformed"
    path.write_bytes(bytes(data))
    again = make_bridge(tmp_path, loop)
    again.pipeline.restore()
    aside = list(tmp_path.glob("j.sqlite3.malformed-*Z"))
    assert len(aside) == 1 and again.pipeline.journal_set_aside == aside[0]
    problem = bridge_state(again)["problems"][-1]
    assert problem["code"] == "journal_set_aside" and problem["file"] == str(aside[0])
    again.ports.handle_lines(FakeLink(), [hello(0, 5, boot="b9"), line(1, 6, "snapshot", occ=START),
                                    line(2, 1000, "lift", sq="e2"), line(3, 1100, "place", sq="e4")])
    settle(loop)
    assert min(e["seq"] for e in events_queued(again)) > top      # seqs go on past those published before
    for made in (path, tmp_path / "j.sqlite3-seqs"):
        assert oct(made.stat().st_mode & 0o777) == "0o600"


def test_a_journal_deleted_with_its_lock_and_seq_floor_gets_both_back(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    """``rm j.sqlite3*`` while the bridge runs takes the ``.lock`` and ``-seqs`` files too: with the new journal
    the bridge makes both again, so a second bridge is still refused and the seq floors of the boards survive a
    later crash."""
    import os

    from touchmove.bridge.journal_lock import JournalLocked
    from touchmove.bridge.seq_floor import SeqFloor

    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    bridge.pipeline.flush()
    floor = bridge.pipeline.seq_floor.floor("brd")
    assert floor > 0
    for name in os.listdir(tmp_path):
        if name.startswith("j.sqlite3"):
            os.unlink(tmp_path / name)
    why = bridge.pipeline.journal.file_lost()
    assert why == "deleted or moved"
    bridge.pipeline.journal_lost(why)
    for side in (tmp_path / "j.sqlite3.lock", tmp_path / "j.sqlite3-seqs"):
        assert side.exists() and oct(side.stat().st_mode & 0o777) == "0o600", side
    cfg = BridgeConfig(MqttConfig(), SerialConfig(), settle_ms=50, journal=str(tmp_path / "j.sqlite3"))
    with pytest.raises(JournalLocked, match=f"in use by another bridge \\(process {os.getpid()} on .*session test"):
        Bridge(cfg, session="second").open()
    found = SeqFloor(tmp_path / "j.sqlite3")
    found.open()
    # the journal_replaced alert: one more
    assert found.floor("brd") == bridge.pipeline.seq_floor.floor("brd") >= floor
    found.close()
    floor = bridge.pipeline.seq_floor.floor("brd")
    bridge.ports.handle_lines(link, [line(4, 2000, "lift", sq="e7"), line(5, 2100, "place", sq="e5")])
    settle(loop)
    bridge.pipeline.flush()
    assert bridge.pipeline.seq_floor.floor("brd") > floor
    found = SeqFloor(tmp_path / "j.sqlite3")             # the new file is the one written to
    found.open()
    assert found.floor("brd") == bridge.pipeline.seq_floor.floor("brd")
    found.close()


def test_a_lock_file_taken_by_another_bridge_first_is_an_error_line_not_a_crash(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture) -> None:
    """The lock file deleted, and a second bridge locking a new one before the watch looks: the running bridge
    says so in an error line naming the other, keeps its own (old) lock and goes on."""
    from touchmove.bridge.journal_lock import JournalLock

    bridge = make_bridge(tmp_path, loop)
    (tmp_path / "j.sqlite3.lock").unlink()
    other = JournalLock(tmp_path / "j.sqlite3")
    other.acquire("intruder")
    try:
        bridge.pipeline.keep_side_files()
    finally:
        other.release()
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert any("another bridge locked a new one" in m and "session intruder" in m for m in errors), errors
    assert not bridge.pipeline.journal_lock.held_at_path()
    bridge.pipeline.keep_side_files()            # the intruder gone: the path is locked again by this bridge
    assert bridge.pipeline.journal_lock.held_at_path()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(board=st.text(min_size=0, max_size=70))
def test_every_hello_id_either_binds_a_publishable_board_or_is_refused(
        tmp_path_factory: pytest.TempPathFactory, board: str) -> None:
    """The id path fuzzed end to end in the bridge: hello -> session -> topics (and the journal)."""
    from touchmove.board_ids import is_board_id

    lp = asyncio.new_event_loop()
    try:
        bridge = make_bridge(tmp_path_factory.mktemp("ids"), lp)
        link = FakeLink()
        bridge.ports.pending_lines[link] = []
        raw = json.dumps({"seq": 0, "t": 5, "type": "hello", "proto": 1, "board": board, "boot": "b"}).encode()
        bridge.ports.handle_lines(link, [raw, line(1, 6, "snapshot", occ=START)])
        if is_board_id(board):
            assert list(bridge.boards) == [board] and link.board == board
        else:
            assert bridge.boards == {} and link.board is None
            assert [p["code"] for p in bridge.problems()] == ["board_id_refused"]
        for topic in bridge.mqtt._retained:
            level = topic.split("/")
            assert all(part.isascii() and part.isprintable() and not set(part) & set("#+\0") for part in level)
        bridge.pipeline.flush()
        assert [row.board for row in bridge.pipeline.journal.boards()] == ([board] if is_board_id(board) else [])
    finally:
        lp.close()


def test_a_file_that_is_no_database_at_the_journal_path_is_left_alone(tmp_path: Path) -> None:
    from touchmove.bridge.journal import open_checked

    path = tmp_path / "notes.txt"
    path.write_text("the round's pairings\n")
    with pytest.raises(sqlite3.DatabaseError):
        open_checked(path)
    assert path.read_text() == "the round's pairings\n" and not list(tmp_path.glob("*.malformed-*"))


def opera_plies(t0: int = 2000) -> list[list[dict[str, Any]]]:
    """The Opera game as a board sends it (lift/place records, 5 s thought, 0.8 s a hand), grouped by ply."""
    plies: list[list[dict[str, Any]]] = []
    for rec in simple_timeline(game_moves(OPERA), t0=t0, think=5000, hand=800):
        if not plies or rec["t"] - plies[-1][-1]["t"] > 2000:
            plies.append([])
        plies[-1].append(rec)
    return plies


@pytest.mark.parametrize("read_back", [None, "before", "after"])
def test_a_crash_while_full_at_a_transposition_recovers_the_game_in_the_order_published(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch,
        read_back: str | None) -> None:
    """bench/crash_while_full.py's run 2 (seed 0, tmpfs): 17 plies published, 13 journaled, then ``kill -9``;
    Nc3 c6 Bg5 (plies 15-17) reach the position Bg5 c6 Nc3 does, which an occupancy board cannot tell apart.
    The restarted bridge publishes the rest of the game and journals it. Without the plies it had published
    (``read_back`` None: the broker did not answer) it takes the usual order, Bg5 c6 Nc3, and its changes_lost
    alert names the order played among the others; with them, read back from the broker's retained PGN before the
    board's snapshot or after it, the game is the one played and published (amended to it when read after)."""
    monkeypatch.setattr(journal_faults, "JOURNAL_RETRY_S", 0.1)
    plies = opera_plies()
    want = [m.uci() for m in game_moves(OPERA)]
    assert len(plies) == len(want) == 33
    bridge = make_bridge(tmp_path, loop)
    flaky = FlakyDb(bridge.pipeline.journal.db)
    bridge.pipeline.journal.db = flaky  # type: ignore[assignment]
    link = FakeLink()
    seq = 0

    def send(target: Bridge, port: FakeLink, recs: list[dict[str, Any]]) -> None:
        nonlocal seq
        for rec in recs:
            seq += 1
            target.ports.handle_lines(port, [line(seq, rec.pop("t"), rec.pop("type"), **rec)])
        settle(loop, 0.12)                                       # the ply settles (50 ms)

    bridge.ports.handle_lines(link, [hello(0, 5), line(1, 6, "snapshot", occ=START)])
    seq = 1
    for ply in plies[:14]:
        send(bridge, link, [dict(r) for r in ply])
    flaky.fail = sqlite3.OperationalError("database or disk is full")
    for ply in plies[14:17]:
        send(bridge, link, [dict(r) for r in ply])
    first = events_queued(bridge)
    assert unique_moves(first) == want[:17]
    assert len(journal_moves(tmp_path / "j.sqlite3")) < 17
    retained = bridge.publisher.pgn_text(bridge.boards["brd"]).encode()       # the broker's retained PGN at the crash
    # kill -9; space comes back; the board's lines written meanwhile are lost (a seq gap), it says hello again
    again = make_bridge(tmp_path, loop)
    again.pipeline.restore()
    again.read_back_published()
    topic = "touchmove/boards/brd/pgn"
    pending = again.mqtt._read_back
    assert pending is not None and pending.wanted == {topic} and pending.topics == "touchmove/boards/+/pgn"
    again.pipeline.flush()
    if read_back == "before":
        again.published_read({topic: retained}, {topic: "brd"})
    position = chess.Board()
    for uci in want[:17]:
        position.push_uci(uci)
    seq += 25
    t = plies[17][0]["t"] - 1000
    again.ports.handle_lines(FakeLink(), [hello(seq, t - 100), line(seq + 1, t, "snapshot",
                                                              occ=f"{int(position.occupied):016x}")])
    seq += 1
    settle(loop, 0.3)
    if read_back == "after":
        again.published_read({topic: retained}, {topic: "brd"})
    link2 = again.boards["brd"].link
    assert isinstance(link2, FakeLink)
    for ply in plies[17:]:
        send(again, link2, [dict(r) for r in ply])
    settle(loop, 0.3)
    after = events_queued(again)
    assert any(e["type"] == "game_end" and e["result"] == "1-0" for e in after)
    transposed = [*want[:14], "c1g5", "c7c6", "b1c3", *want[17:]]       # Bg5 c6 Nc3 for Nc3 c6 Bg5
    again.pipeline.flush()
    with sqlite3.connect(tmp_path / "j.sqlite3") as db:
        journaled = [json.loads(p) for (p,) in db.execute("SELECT payload FROM events WHERE board = 'brd'")]
    exported = [m.uci() for m in
                pgn_games(again.pipeline.journal, "brd", key=again.pipeline.checkpoint_key)[0].mainline_moves()]
    lost = [e for e in after if e["type"] == "alert" and e["code"] == "changes_lost"]
    if read_back is None:
        assert unique_moves(first + after) == unique_moves(journaled) == exported == transposed
        assert len(lost) == 1 and ["Nc3", "c6", "Bg5"] in lost[0]["detail"]["other_orders"]
    else:
        assert unique_moves(first + after) == unique_moves(journaled) == exported == want
        assert lost[-1]["detail"]["plies"][-3:] == ["Nc3", "c6", "Bg5"] and lost[-1]["detail"]["order"] == "published"
        amended = [e["ply"] for e in after if e["type"] == "move_amended"]
        assert len(lost) == (1 if read_back == "before" else 2) and amended == ([] if read_back == "before" else
                                                                                 [15, 16, 17])
    contents: dict[int, set[str]] = {}
    for event in first + after:
        contents.setdefault(event["seq"], set()).add(json.dumps({k: v for k, v in event.items()
                                                                 if k not in ("session", "ts")}, sort_keys=True))
    assert all(len(bodies) == 1 for bodies in contents.values())       # no seq carries two contents


def test_the_export_replays_with_the_settle_time_the_bridge_ran_with_before_any_checkpoint(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    # A bridge set to settle in 50 ms publishes 1.e4 150 ms after the pawn is put down (before any checkpoint is
    # written): the export, replaying the journal, must use 50 ms too. With the default 200 ms it left the game's
    # last move out (the emulated Pico's shared games: the export one ply short of the journal's events).
    bridge = make_bridge(tmp_path, loop, settle_ms=50)
    play_e4(bridge, FakeLink(), loop)
    assert moves_queued(bridge) == ["e2e4"]
    bridge.pipeline.flush()
    assert bridge.pipeline.journal.checkpoint("brd") is None
    assert [m.uci() for m in pgn_games(bridge.pipeline.journal, "brd")[-1].mainline_moves()] == ["e2e4"]
    again = make_bridge(tmp_path, loop, settle_ms=80)   # restarted with another settle time: the export follows
    again.pipeline.restore()
    again.pipeline.flush()
    assert again.pipeline.journal.settle_ms("brd") == 80
