"""The broadcaster is wiring: it builds its parts, hands each its collaborators (never the broadcaster) and forwards
no calls to them; callers reach the part that does the work (``hub.storage.by_number``, ``hub.outputs.public_pgn()``,
``hub.actions.record_result(...)``)."""

from __future__ import annotations

from pathlib import Path

import touchmove.broadcast.broadcaster
from tests.broadcast.broadcast_helpers import tournament_data
from tests.forwarding import class_forwards
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.tournament import parse_tournament

#: The parts a Broadcaster builds (its attributes).
PARTS = ("storage", "outputs", "ingest", "actions", "streams")


def test_the_broadcaster_forwards_nothing_to_its_parts() -> None:
    found = class_forwards(Path(touchmove.broadcast.broadcaster.__file__), "Broadcaster", PARTS)
    assert found == {}, f"one-line forwards to the parts: {sorted(found)}"


def test_each_part_is_handed_its_collaborators_never_the_broadcaster(tmp_path: Path) -> None:
    hub = Broadcaster(parse_tournament(tournament_data(2, out=tmp_path))).open()
    for name in PARTS:
        part = getattr(hub, name)
        held = [attr for attr, value in vars(part).items() if value is hub]
        assert held == [], f"hub.{name} holds the broadcaster as {held}: it reaches the other parts through it"
    assert hub.outputs.source is hub.storage and hub.ingest.target is hub.storage
    assert hub.actions.target is hub.storage and hub.actions.resync == hub.ingest.resync
    assert hub.storage.notifier is hub.streams and hub.streams.boards() is hub.storage.by_number
