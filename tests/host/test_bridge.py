"""The bridge in-process, with stand-in serial links (no ports, no broker): the data path, resync, the
journal's resume after a crash, and every MQTT command topic fuzzed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from touchmove.bridge import Bridge
from touchmove.config import BridgeConfig, MqttConfig, SerialConfig
from touchmove.mqtt_bridge import Outgoing


class FakeLink:
    def __init__(self, path: str = "/dev/fake0") -> None:
        self.path = path
        self.key = path
        self.board: str | None = None
        self.commands: list[dict[str, Any]] = []

    def send(self, cmd: dict[str, Any]) -> bool:
        self.commands.append(cmd)
        return True

    def close(self) -> None:
        pass


def line(seq: int, t: int, kind: str, **fields: Any) -> bytes:
    return json.dumps({"seq": seq, "t": t, "type": kind, **fields}).encode()


def hello(seq: int, t: int, boot: str = "b1", board: str = "brd") -> bytes:
    return line(seq, t, "hello", proto=1, fw="x", board=board, boot=boot)


START = "ffff00000000ffff"


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    lp = asyncio.new_event_loop()
    asyncio.set_event_loop(lp)
    yield lp
    lp.close()
    asyncio.set_event_loop(None)


def make_bridge(tmp: Path, loop: asyncio.AbstractEventLoop, settle_ms: int = 50) -> Bridge:
    cfg = BridgeConfig(MqttConfig(), SerialConfig(), settle_ms=settle_ms, journal=str(tmp / "j.sqlite3"))
    bridge = Bridge(cfg, session="test")
    bridge._loop = loop
    return bridge


def events_queued(bridge: Bridge) -> list[dict[str, Any]]:
    return [json.loads(m.payload) for m in bridge.mqtt._events]


def settle(loop: asyncio.AbstractEventLoop, seconds: float = 0.15) -> None:
    loop.run_until_complete(asyncio.sleep(seconds))


def play_e4(bridge: Bridge, link: FakeLink, loop: asyncio.AbstractEventLoop) -> None:
    bridge.handle_lines(link, [hello(0, 5), line(1, 6, "snapshot", occ=START), line(2, 1000, "lift", sq="e2"),
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
    assert bridge.journal.event_count("brd") == 3
    assert {"cmd": "snapshot"} in link.commands
    assert {"cmd": "leds", "squares": ["e2", "e4"], "color": [0, 48, 0]} in link.commands
    state = json.loads(bridge.mqtt._retained["touchmove/boards/brd/state"]())  # type: ignore[operator]
    assert state["ply"] == 1 and state["last_move"] == "e2e4" and state["in_sync"] is True


def test_seq_gap_and_malformed_lines_ask_for_a_snapshot(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    bridge.handle_lines(link, [hello(0, 5), line(1, 6, "snapshot", occ=START)])
    link.commands.clear()
    bridge.boards["brd"].last_snapshot_request = 0
    bridge.handle_lines(link, [line(5, 900, "lift", sq="e2")])
    assert bridge.stats["gaps"] == 1 and link.commands == [{"cmd": "snapshot"}]
    link.commands.clear()
    bridge.boards["brd"].last_snapshot_request = 0
    bridge.handle_lines(link, [b"{garbage", None, line(6, 1000, "place", sq="e4")])
    assert bridge.stats["malformed"] == 2 and link.commands[0] == {"cmd": "snapshot"}
    settle(loop)
    assert [e["uci"] for e in events_queued(bridge) if e["type"] == "move"] == ["e2e4"]


def test_a_reboot_keeps_board_time_monotonic(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    before = bridge.boards["brd"].last_t
    bridge.handle_lines(link, [hello(0, 3, boot="b2"), line(1, 4, "snapshot", occ="ffff00001000efff"),
                               line(2, 500, "lift", sq="e7"), line(3, 600, "place", sq="e5")])
    settle(loop)
    times = [e.t for e in bridge.journal.entries("brd")]
    assert times == sorted(times) and times[-1] > before
    assert [e["uci"] for e in events_queued(bridge) if e["type"] == "move"] == ["e2e4", "e7e5"]


def test_resume_after_a_crash_publishes_only_what_was_not_acknowledged(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    bridge.handle_lines(link, [line(4, 2000, "lift", sq="e7"), line(5, 2100, "place", sq="e5")])
    settle(loop)
    bridge._on_acked(("brd", 3))
    bridge.flush()
    state = bridge.boards["brd"].engine.state()
    # kill -9: nothing else happens; a new daemon starts on the same journal
    again = make_bridge(tmp_path, loop)
    again.restore()
    again.flush()
    assert again.boards["brd"].engine.state() == state
    assert [e["seq"] for e in events_queued(again)] == [4, 5]
    # the board comes back (same boot) and goes on: seq continues, no duplicate
    link2 = FakeLink("/dev/fake1")
    again.handle_lines(link2, [hello(6, 2500), line(7, 3000, "lift", sq="g1"), line(8, 3100, "place", sq="f3")])
    settle(loop)
    moves = [e["uci"] for e in events_queued(again) if e["type"] == "move"]
    assert moves == ["e7e5", "g1f3"]
    assert again.stats["gaps"] == 0


def test_lines_buffered_before_hello_are_kept(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    # the daemon restarts; the port holds lines the board wrote meanwhile, then the hello reply
    again = make_bridge(tmp_path, loop)
    again.restore()
    link2 = FakeLink("/dev/fake1")
    again.pending_lines[link2] = []
    again.handle_lines(link2, [line(3, 1100, "place", sq="e4"), line(4, 2000, "lift", sq="e7"),
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
    assert '[White "Morphy"]' in bridge.pgn_text(bridge.boards["brd"])
    assert command(bridge, loop, topic, b'{"command":"takeback","ply":1}')["status"] == "ok"
    settle(loop)
    assert any(e["type"] == "takeback" for e in events_queued(bridge))
    fen = "8/8/8/8/8/8/4K3/6k1 w - - 0 1"
    assert command(bridge, loop, topic, json.dumps({"command": "setup", "fen": fen}).encode())["status"] == "ok"
    sources = [e.source for e in bridge.journal.entries("brd")]
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
    journaled = [e.body or "" for e in bridge.journal.entries("brd") if e.source == "operator"]
    assert sum('"type":"resync"' in line for line in journaled) == 2


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
    "command": st.sampled_from(["new_game", "setup", "promote", "takeback", "assign", "resync", "resign", ""])
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
        entries = len(list(bridge.journal.entries("brd")))
        state = bridge.boards["brd"].engine.state()
        headers = dict(bridge.boards["brd"].headers)
        reply = command(bridge, loop, topic, payload, retained)
        assert reply["status"] in ("ok", "error")
        assert reply["topic"].endswith("/response") or "/response/" in reply["topic"]
        if reply["status"] == "error":
            assert isinstance(reply["error"], str) and reply["error"]
            assert len(list(bridge.journal.entries("brd"))) == entries
            assert bridge.boards["brd"].engine.state() == state
            assert bridge.boards["brd"].headers == headers
        if retained:
            assert reply["status"] == "error"

    check()
