"""An exception inside the engine's ``feed`` in the running bridge: the board's engine is rebuilt from its
checkpoint and journal (never left half-updated), an ``engine_rebuilt`` alert goes out in the board's event
stream, and the game goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.host.test_bridge import FakeLink, events_queued, line, make_bridge, play_e4, settle
from touchmove import records
from touchmove.rules import Engine


def test_an_engine_failure_rebuilds_the_board_from_its_journal(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    play_e4(bridge, link, loop)
    broken = bridge.boards["brd"].engine
    original = Engine.feed
    failures: list[str] = []

    def feed_then_fail(self: Engine, record: records.Record) -> Any:
        out = original(self, record)        # the engine's state moves on, then the call fails: half-updated
        if self is broken and not failures:
            failures.append(records.to_line(record))
            raise RuntimeError("bug in the engine")
        return out

    monkeypatch.setattr(Engine, "feed", feed_then_fail)
    bridge.ports.handle_lines(link, [line(4, 3000, "lift", sq="e7")])
    settle(loop)
    sess = bridge.boards["brd"]
    assert failures and sess.engine is not broken
    alerts = [e for e in events_queued(bridge) if e["type"] == "alert" and e["code"] == "engine_rebuilt"]
    assert len(alerts) == 1
    alert = alerts[0]
    assert alert["origin"] == "bridge" and alert["detail"]["rebuilt_from"] == "checkpoint and journal"
    assert "bug in the engine" in alert["detail"]["error"] and '"e7"' in alert["detail"]["input"]
    # the rebuilt engine holds the lift (replayed from the journal) and the game goes on from it
    bridge.ports.handle_lines(link, [line(5, 3100, "place", sq="e5")])
    settle(loop)
    events = events_queued(bridge)
    assert [e["uci"] for e in events if e["type"] == "move"] == ["e2e4", "e7e5"]
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert sess.engine.state().ply == 2 and bridge.pipeline.journal.event_count("brd") == seqs[-1]
