"""A board that says in its ``hello`` that it reset itself unasked (its watchdog, or its firmware after a fatal
error) raises a ``board_reset`` alert in its event stream, once per boot; a power-up or a reset button does not;
the game goes on either way."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from tests.host.test_bridge import START, FakeLink, events_queued, line, make_bridge, moves_queued, settle


def hello(seq: int, t: int, boot: str, reset: str | None) -> bytes:
    extra = {} if reset is None else {"reset": reset}
    return line(seq, t, "hello", proto=1, fw="touchmove/0.1.0", board="brd", boot=boot, name="touchmove", **extra)


def resets(events: list[dict[str, object]]) -> list[object]:
    return [e["detail"] for e in events if e["type"] == "alert" and e["code"] == "board_reset"]


def test_a_watchdog_or_fatal_reset_is_an_alert_once_a_boot(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    bridge.ports.handle_lines(link, [hello(0, 5, "b1", "power"), line(1, 6, "snapshot", occ=START),
                               line(2, 1000, "lift", sq="e2"), line(3, 1100, "place", sq="e4")])
    settle(loop)
    assert resets(events_queued(bridge)) == []
    # the watchdog resets the board: its new boot says so
    bridge.ports.handle_lines(link, [hello(0, 40, "b2", "watchdog"), line(1, 41, "snapshot", occ="ffff00001000efff")])
    settle(loop)
    got = resets(events_queued(bridge))
    assert len(got) == 1, got
    detail = got[0]
    assert isinstance(detail, dict)
    assert detail["cause"] == "watchdog" and detail["boot"] == "b2" and detail["port"] == "/dev/fake0"
    assert "watchdog" in detail["message"]
    alert = next(e for e in events_queued(bridge) if e["type"] == "alert" and e["code"] == "board_reset")
    assert alert["origin"] == "bridge" and alert["board"] == "brd"
    bridge.pipeline.journal.commit()
    with sqlite3.connect(tmp_path / "j.sqlite3") as db:
        codes = [json.loads(p).get("code") for (p,) in db.execute("SELECT payload FROM events WHERE board = 'brd'")]
    assert codes.count("board_reset") == 1, "the alert is not journaled"
    # the same boot says hello again (the host asked, or the port was opened again): no second alert
    bridge.ports.handle_lines(link, [hello(2, 300, "b2", "watchdog")])
    settle(loop)
    assert len(resets(events_queued(bridge))) == 1
    # the game goes on
    bridge.ports.handle_lines(link, [line(3, 1400, "lift", sq="e7"), line(4, 1500, "place", sq="e5")])
    settle(loop)
    assert moves_queued(bridge) == ["e2e4", "e7e5"]
    # a fatal error: another alert; the reset button (hard) and a cause no firmware sends: none
    bridge.ports.handle_lines(link, [hello(0, 50, "b3", "fatal")])
    bridge.ports.handle_lines(link, [hello(0, 60, "b4", "hard")])
    bridge.ports.handle_lines(link, [hello(0, 70, "b5", "\u0000watchdog")])
    settle(loop)
    assert [d["cause"] for d in resets(events_queued(bridge)) if isinstance(d, dict)] == ["watchdog", "fatal"]


def board_errors(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e["detail"] for e in events if e["type"] == "alert" and e["code"] == "board_error"  # type: ignore[misc]
            and isinstance(e["detail"], dict)]


def test_a_firmware_error_record_is_an_alert_once_per_kind_and_boot(tmp_path: Path,
                                                                    loop: asyncio.AbstractEventLoop) -> None:
    """A board that must not scan (a board.json the firmware refused) repeats its error every 10 s; a sensor bus
    counts its errors up: the arbiter hears of each kind once a boot, with the board's sentence and what to do."""
    bridge = make_bridge(tmp_path, loop)
    link = FakeLink()
    refused = "firmware not started: board.json: 'rate' must be 10-2000, got 5"
    bridge.ports.handle_lines(link, [hello(0, 5, "b1", "power"), line(1, 6, "error", why=refused),
                               line(2, 10_006, "error", why=refused), line(3, 20_006, "error", why=refused)])
    settle(loop)
    got = board_errors(events_queued(bridge))
    assert [d["why"] for d in got] == [refused]
    assert got[0]["boot"] == "b1" and got[0]["port"] == "/dev/fake0"
    assert "board.json" in str(got[0]["message"]) and "fix" in str(got[0]["message"])
    # fixed and restarted: a normal boot with sensor bus errors counting up, then commands not answered
    bus = "sensor bus: {} errors since boot ({} timed out), last good readings kept"
    bridge.ports.handle_lines(link, [hello(0, 5, "b2", "power"), line(1, 6, "snapshot", occ=START),
                               line(2, 1000, "error", why=bus.format(3, 1)),
                               line(3, 2000, "error", why=bus.format(9, 4)),
                               line(4, 3000, "error", why="commands: 2 since boot got no answer (2 out of memory)"),
                               line(5, 4000, "lift", sq="e2"), line(6, 4100, "place", sq="e4")])
    settle(loop)
    whys = [d["why"] for d in board_errors(events_queued(bridge))]
    assert whys == [refused, bus.format(3, 1), "commands: 2 since boot got no answer (2 out of memory)"]
    assert moves_queued(bridge) == ["e2e4"], "the game goes on"
    # the same kind in a later boot is told again
    bridge.ports.handle_lines(link, [hello(0, 5, "b3", "power"), line(1, 6, "error", why=bus.format(1, 0))])
    settle(loop)
    assert len(board_errors(events_queued(bridge))) == 4
