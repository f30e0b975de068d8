"""The scenario corpus: each scenario is a start position, a recording, and what the engine must say."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scenario_format import Scenario, load_all

from touchmove.rules import Engine, Event

SCENARIOS = load_all()


def run(scenario: Scenario) -> tuple[Engine, list[Event]]:
    kwargs: dict[str, Any] = {"fen": scenario.fen, "chess960": scenario.chess960}
    if scenario.settle_ms is not None:
        kwargs["settle_ms"] = scenario.settle_ms
    engine = Engine(**kwargs)
    events: list[Event] = []
    for record in scenario.records:
        events += engine.feed(record)
    events += engine.finish()
    return engine, events


def matches(event: dict[str, Any], pattern: dict[str, Any]) -> bool:
    for key, want in pattern.items():
        have = event.get(key)
        if isinstance(want, dict):
            if not isinstance(have, dict) or not matches(have, want):
                return False
        elif have != want:
            return False
    return True


def test_the_corpus_is_large_enough() -> None:
    assert len(SCENARIOS) >= 50
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS), "scenario names must be unique"


def test_every_scenario_states_its_alerts() -> None:
    # A spurious alert must fail its scenario: "alerts": [] where none is due.
    silent = [s.name for s in SCENARIOS if "alerts" not in s.expect]
    assert not silent, f"scenarios without \"alerts\": {silent}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario) -> None:
    engine, events = run(scenario)
    expect = scenario.expect
    games = engine.games
    if "moves" in expect:
        assert [m.uci() for m in games[-1].moves] == expect["moves"]
    if "games" in expect:
        assert [[m.uci() for m in g.moves] for g in games] == expect["games"]
    if "result" in expect:
        assert games[-1].result == expect["result"]
    alerts = [f"{e.code} {e.article} {e.ply}" for e in events if e.type == "alert"]  # type: ignore[attr-defined]
    assert alerts == expect["alerts"]
    dicts = [e.to_dict() for e in events]
    position = 0
    for pattern in expect.get("events", []):
        while position < len(dicts) and not matches(dicts[position], pattern):
            position += 1
        assert position < len(dicts), f"no event {pattern} in order among {dicts}"
        position += 1


def test_every_event_writes_the_json_of_its_dict() -> None:
    # Touch, move and clock events write their JSON lines themselves (the hot path of `replay --jsonl`).
    seen = set()
    for scenario in SCENARIOS:
        _, events = run(scenario)
        for event in events:
            seen.add(event.type)
            assert event.to_json() == json.dumps(event.to_dict(), separators=(",", ":")), event
    assert {"touch", "move", "move_amended", "clock", "alert", "game_start", "game_end", "takeback"} <= seen
