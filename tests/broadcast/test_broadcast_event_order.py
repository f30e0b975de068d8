"""Events over QoS 0 or two connections (a NATS cluster, ``events_standby``) may come twice or out of order: the
broadcaster takes each (session, seq) once and in seq order, holding a later event until the one before it
comes, and gives up waiting after GAP_WAIT_S (the missing plies then come from the retained PGN)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.broadcast.broadcast_helpers import make_tournament, tournament_data
from tests.broadcast.test_broadcast_model import moves_events
from touchmove.broadcast import bridge_ingest
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.tournament import Tournament, TournamentError, parse_tournament

UCIS = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]


def sequenced(ucis: list[str]) -> list[dict[str, Any]]:
    return [{**e, "board": "b01", "seq": n, "session": "s1"} for n, e in enumerate(moves_events(ucis), start=1)]


def tournament(**broker: Any) -> Tournament:
    data = tournament_data(1)
    data["brokers"][0].update(broker)
    return parse_tournament(data)


def hub_on_qos0(tmp_path: Path) -> Broadcaster:
    hub = Broadcaster(tournament(subscribe_qos=0), output_dir=tmp_path).open()
    assert hub.ingest.hold_gaps == frozenset({0})
    return hub


def test_a_later_event_waits_for_the_one_before_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def play() -> None:
        hub = hub_on_qos0(tmp_path)
        seen: list[int] = []
        console = hub.storage.console
        keep = console.on_event

        def on_event(number: int, event: dict[str, Any]) -> bool:
            seen.append(event["seq"])
            return keep(number, event)
        monkeypatch.setattr(console, "on_event", on_event)
        events = sequenced(UCIS)
        for n in (0, 1, 2, 4, 5, 3, 4, 1):     # seq 1-3, then 5 and 6 before 4, then repeats
            hub.handle(BridgeMessage("touchmove", "b01", "events", events[n]))
            if n == 5:
                assert hub.storage.by_number[1].game.ply == 2      # plies 3 and 4 wait for ply 3's event
        assert seen == [1, 2, 3, 4, 5, 6]
        assert [m.uci for m in hub.storage.by_number[1].game.moves] == UCIS[:5]
        assert hub.ingest.held_events == 2 and hub.ingest.gaps_given_up == 0
    asyncio.run(play())


def test_a_gap_that_never_fills_is_given_up_after_the_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge_ingest, "GAP_WAIT_S", 0.2)

    async def play() -> None:
        hub = hub_on_qos0(tmp_path)
        events = sequenced(UCIS)
        for n in (0, 1, 2, 4):                 # seq 4 (ply 3) never comes
            hub.handle(BridgeMessage("touchmove", "b01", "events", events[n]))
        view = hub.storage.by_number[1]
        assert view.game.ply == 2 and view.waiting
        await asyncio.sleep(0.5)
        assert not view.waiting and hub.ingest.gaps_given_up == 1
        assert view.sessions_seq["s1"] == 5    # seq 5 applied (a gap: the game waits for the bridge's PGN)
    asyncio.run(play())


def test_qos1_without_standby_applies_at_once(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(1), output_dir=tmp_path).open()
    assert hub.ingest.hold_gaps == frozenset()
    events = sequenced(UCIS)
    for n in (0, 1, 2, 4):
        hub.handle(BridgeMessage("touchmove", "b01", "events", events[n]))
    assert hub.storage.by_number[1].sessions_seq["s1"] == 5 and not hub.storage.by_number[1].waiting


def test_events_standby_needs_two_nodes() -> None:
    with pytest.raises(TournamentError, match="events_standby needs the urls of two nodes"):
        tournament(events_standby=True)
    two = {"urls": ["mqtt://a:1883", "mqtt://b:1883"]}
    with pytest.raises(TournamentError, match="events_standby must be true or false"):
        tournament(events_standby="yes", **two)
    assert tournament(events_standby=True, **two).brokers[0].events_standby


def test_a_state_ahead_of_its_event_waits_for_the_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The events come on connections of their own: the bridge's state and PGN of a move may come before the
    move's event. The PGN is read only when the event has not come within the wait (a lost last move)."""
    monkeypatch.setattr(bridge_ingest, "GAP_WAIT_S", 0.2)
    read: list[int] = []

    async def play() -> None:
        hub = hub_on_qos0(tmp_path)
        keep = hub.ingest._catch_up
        monkeypatch.setattr(hub.ingest, "_catch_up", lambda view: read.append(view.game.ply) or keep(view))
        events = sequenced(UCIS)
        for e in events[:3]:                                            # plies 1-2
            hub.handle(BridgeMessage("touchmove", "b01", "events", e))
        view = hub.storage.by_number[1]
        hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 1, "ply": 3, "in_sync": True}))
        hub.handle(BridgeMessage("touchmove", "b01", "pgn", '[Result "*"]\n\n1. e4 e5 2. Nf3 *\n'))
        assert view.game.ply == 2 and read == []                      # not at once
        hub.handle(BridgeMessage("touchmove", "b01", "events", events[3]))  # ply 3's event comes
        await asyncio.sleep(0.4)
        assert view.game.ply == 3 and read == []                      # no PGN read
        hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 1, "ply": 4, "in_sync": True}))
        hub.handle(BridgeMessage("touchmove", "b01", "pgn", '[Result "*"]\n\n1. e4 e5 2. Nf3 Nc6 *\n'))
        await asyncio.sleep(0.4)                                        # ply 4's event never comes
        assert read == [3] and [m.uci for m in view.game.moves] == UCIS[:4]
    asyncio.run(play())


def test_a_broadcaster_behind_waits_for_its_queue_before_giving_up(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages received and still queued (the broadcaster is behind) may hold the missing event: the wait goes on
    while there are any (before, a broadcaster 2 s behind gave up every gap and read PGNs, falling further behind)."""
    monkeypatch.setattr(bridge_ingest, "GAP_WAIT_S", 0.2)

    async def play() -> None:
        hub = hub_on_qos0(tmp_path)
        queued = [5]
        hub.ingest.backlog = lambda: queued[0]
        events = sequenced(UCIS)
        for n in (0, 1, 2, 4):
            hub.handle(BridgeMessage("touchmove", "b01", "events", events[n]))
        view = hub.storage.by_number[1]
        await asyncio.sleep(0.6)
        assert view.waiting and hub.ingest.gaps_given_up == 0       # still queued: still waiting
        hub.handle(BridgeMessage("touchmove", "b01", "events", events[3]))
        assert not view.waiting and view.game.ply == 4
        hub.handle(BridgeMessage("touchmove", "b01", "events", events[5]))
        hub.handle(BridgeMessage("touchmove", "b01", "events", {**events[5], "seq": 8}))   # seq 7 missing
        queued[0] = 0
        await asyncio.sleep(0.6)
        assert not view.waiting and hub.ingest.gaps_given_up == 1   # the queue empty: given up
    asyncio.run(play())
