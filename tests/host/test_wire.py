"""The MQTT wire contract: topics built and taken apart again, the broker rules made of them, payload checks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from touchmove.mqtt import wire
from touchmove.mqtt.auth import event_rules

LEVEL = st.text(st.characters(blacklist_characters="/+#\x00", blacklist_categories=("Cs",)), min_size=1,
                max_size=12)


@given(base=LEVEL, board=LEVEL, leaf=st.sampled_from(wire.BOARD_LEAVES))
def test_board_topics_come_apart_again(base: str, board: str, leaf: str) -> None:
    topic = wire.board_topic(base, board, leaf)
    assert wire.parse_topic(topic, ["other", base]) == wire.Topic(base, board, leaf)


@given(base=LEVEL, leaf=st.sampled_from(wire.BRIDGE_LEAVES))
def test_bridge_topics_come_apart_again(base: str, leaf: str) -> None:
    assert wire.parse_topic(wire.bridge_topic(base, leaf), [base]) == wire.Topic(base, None, leaf)


@given(topic=st.text(max_size=60), bases=st.lists(LEVEL, max_size=3))
def test_any_topic_parses_or_is_refused(topic: str, bases: list[str]) -> None:
    where = wire.parse_topic(topic, bases)
    if where is not None:      # a topic taken apart is built back exactly
        rebuilt = (wire.board_topic(where.base, where.board, where.leaf) if where.board is not None
                   else wire.bridge_topic(where.base, where.leaf))
        assert rebuilt == topic


def test_commands_and_what_is_not_one() -> None:
    assert wire.command_of(wire.set_topic("hall-a", "b7"), "hall-a") == ("set", "b7")
    assert wire.command_of(wire.request_topic("hall-a", "leds"), "hall-a") == ("request", "leds")
    assert wire.command_of(wire.board_topic("hall-a", "b7", "state"), "hall-a") is None
    assert wire.command_of(wire.set_topic("hall-b", "b7"), "hall-a") is None
    assert wire.parse_topic("hall-a/boards/b7/set", ["hall-a"]) is None      # commands are not published state
    assert wire.parse_topic("hall-a/boards//state", ["hall-a"]) is None


def test_filters_of_each_service() -> None:
    assert wire.command_filters("h") == ("h/boards/+/set", "h/bridge/request/+")
    subs = wire.broadcaster_filters("h", "grp")
    assert "$share/grp/h/boards/+/events" in subs and "h/boards/+/state" in subs and "h/bridge/state" in subs
    assert not any(s.startswith("$share") for s in subs if not s.endswith("/events"))
    bridge, arbiter = event_rules(["h"], ["arb"], [])[:2]
    assert set(wire.bridge_writes("h")) <= set(bridge.write) and set(wire.bridge_reads("h")) <= set(bridge.read)
    assert set(arbiter.write) >= set(wire.command_filters("h")) and wire.everything("h") in arbiter.read
    assert wire.probe_topic("arb", "#") in arbiter.write


def test_payload_checks() -> None:
    state: wire.BoardState = {"board": "b1", "game": 1, "ply": 0, "fen": "8/8/8/8/8/8/8/K6k w - - 0 1",
                              "last_move": None, "in_sync": True, "occupancy": "0" * 16, "game_over": False,
                              "session": "s", "ts": "2026-12-02T07:00:00Z"}
    assert wire.problem_in_state(state) is None
    assert wire.problem_in_state({**state, "ply": "one"}) == "'ply' has the wrong type (str)"
    assert wire.problem_in_state({k: v for k, v in state.items() if k != "fen"}) == "missing field 'fen'"
    assert wire.problem_in_availability({"state": "online"}) is None
    assert wire.problem_in_availability({"state": "away"}) is not None
    event = {"type": "move", "game": 1, "t": 5, "board": "b1", "seq": 3, "session": "s", "ts": "x"}
    assert wire.problem_in_event(event) is None
    assert wire.problem_in_event({k: v for k, v in event.items() if k != "seq"}) == "missing field 'seq'"
    assert wire.problem_in_event([]) == "payload must be a JSON object"
