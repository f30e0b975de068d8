"""A board built from hardware/ presses its clock without knowing the time (``"remaining": null``): the
broadcaster takes those presses (none rejected) and the clock reaches the PGN whenever a time is known."""

from __future__ import annotations

import json
from pathlib import Path

from tests.broadcast.broadcast_helpers import make_tournament
from touchmove import records
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.mqtt.events import check_event
from touchmove.replay import replay
from touchmove.rules import Engine
from touchmove.sim import demo


def opera_events(remaining: int | None) -> list[dict[str, object]]:
    """Return the engine's events for the Opera Game played by the hand model, every press with ``remaining``."""
    game = demo.read_game(demo.DEFAULT_PGN)
    recs = demo.timeline_for(game)
    lines = []
    for rec in recs:
        line = records.to_dict(rec)
        if line["type"] == "clock":
            line["remaining"] = remaining
            if remaining is None:
                line.pop("remaining")
        lines.append(json.dumps(line))
    return [json.loads(e.to_json()) for e in replay(lines, Engine(settle_ms=200))]


def feed(hub: Broadcaster, events: list[dict[str, object]]) -> None:
    for e in events:
        hub.handle(BridgeMessage("touchmove", "b01", "events", e))


def test_a_press_without_a_time_is_not_an_error() -> None:
    assert check_event({"type": "clock", "game": 1, "ply": 3, "side": "white", "remaining": None, "t": 5}) is None
    assert check_event({"type": "clock", "game": 1, "ply": 3, "side": "white", "t": 5}) is None
    assert check_event({"type": "clock", "game": 1, "ply": 3, "side": "white", "remaining": "3 min"}) is not None


def test_the_opera_game_from_a_board_without_a_clock_display(tmp_path: Path) -> None:
    events = opera_events(None)
    presses = [e for e in events if e["type"] == "clock"]
    assert len(presses) >= 30 and all(e["remaining"] is None for e in presses)
    hub = Broadcaster(make_tournament(1), output_dir=tmp_path).open()
    feed(hub, events)
    status = hub.status()
    assert status["rejected_events"] == 0
    assert hub.storage.by_number[1].game.ply == 33
    assert "17. Rd8#" in hub.outputs.round_pgn() and "%clk" not in hub.outputs.round_pgn()


def test_known_times_reach_the_pgn(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(1), output_dir=tmp_path).open()
    feed(hub, opera_events(61_000))
    assert hub.status()["rejected_events"] == 0
    assert "[%clk 0:01:01]" in hub.outputs.round_pgn()
