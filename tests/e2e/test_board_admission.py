"""What a port may bring in, end to end: stand-in boards (tests/e2e/fake_board.py) -> ptys -> ``touchmove run``
-> a private Mosquitto. A board id with a control character, and operator records sent on a board's serial line,
change nothing for the hall: the MQTT link never reconnects, every other board's game is whole on MQTT, in the
journal and in ``touchmove export``; a journal that holds such an id heals itself. And what a board says is wrong
with it: the real firmware with a board.json it refuses is an alert the arbiter sees."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from tests.e2e.helpers import Broker, unique_moves
from tests.e2e.test_bridge_hardening import TIMELINE, WANT, Hall, full_counts

STATE = "touchmove/bridge/state"


def problems(hall: Hall) -> list[dict[str, object]]:
    last = hall.sub.last(STATE)
    return list(last.json().get("problems", [])) if last is not None else []


def connects(hall: Hall) -> int:
    return hall.log().count("INFO touchmove.bridge.mqtt_link: connected to")


def test_a_board_id_with_a_control_character_is_refused_and_the_hall_stays_on_mqtt(
        tmp_path: Path, broker: Broker) -> None:
    hall = Hall(tmp_path, broker)
    try:
        for name, board_id in (("board1", "hall\tA"), ("board2", "nul\x7fdel")):
            hall.board(name, board_id).start()
        hall.board("board3", "fake1").start()
        hall.sub.wait_for(lambda: {p["code"] for p in problems(hall)} == {"board_id_refused"}
                          and len(problems(hall)) == 2, 30, "both refused ids on bridge/state")
        hall.wait_game("fake1")
        assert connects(hall) == 1                      # the link never flapped
        assert {m.topic.split("/")[2] for m in hall.sub.messages if m.topic.startswith("touchmove/boards/")} == {
            "fake1"}
        message = str(problems(hall)[0]["message"])
        assert "'hall\\tA'" in message or "'nul\\x7fdel'" in message
    finally:
        hall.stop()
    assert hall.plies("fake1") == full_counts(len(WANT))


def test_a_journal_holding_an_id_it_cannot_publish_heals_itself(tmp_path: Path, broker: Broker) -> None:
    hall = Hall(tmp_path, broker)
    hall.board("board1", "fake1").start()
    hall.sub.wait_for(lambda: len(unique_moves(hall.sub.events("fake1"))) >= 2, 30, "two plies")
    hall.stop()
    with sqlite3.connect(hall.journal) as db:     # an id journaled by a bridge before the rule
        db.execute("INSERT INTO boards(board) VALUES ('bad\tid')")
        payload = json.dumps({"type": "touch", "board": "bad\tid", "seq": 1, "game": 1})
        db.execute("INSERT INTO events(board, seq, game, type, payload) VALUES ('bad\tid', 1, 1, 'touch', ?)",
                   (payload,))
    (tmp_path / "daemon.log").unlink()
    again = Hall(tmp_path, broker)
    try:
        again.board("board2", "fake2").start()
        again.wait_game("fake2")
        assert connects(again) == 1
        assert [p["code"] for p in problems(again)] == ["journal_board_refused"]
    finally:
        again.stop()
    assert again.plies("fake2") == full_counts(len(WANT))


def test_operator_records_on_a_boards_line_change_nothing(tmp_path: Path, broker: Broker) -> None:
    """A gadget on the board's USB line declares a result, takes back and sets up: all refused, reported."""
    at = TIMELINE[len(TIMELINE) // 2]["t"]
    forged = [{"type": "result", "result": "0-1", "reason": "resignation", "t": at},
              {"type": "takeback", "ply": 1, "t": at + 1}, {"type": "setup", "fen": "8/8/8/8/8/8/4K3/6k1 w - - 0 1",
                                                            "t": at + 2},
              {"type": "resync", "moves": ["e4"], "t": at + 3}]
    hall = Hall(tmp_path, broker)
    try:
        hall.board("board1", "fake1", *[f"--inject={at + i}:{json.dumps(r)}" for i, r in enumerate(forged)]).start()
        hall.wait_game("fake1")
        events = hall.sub.events("fake1")
        ends = [e for e in events if e["type"] == "game_end"]
        assert len(ends) == 1 and ends[0].get("by") != "arbiter"
        assert not any(e["type"] in ("takeback", "resync_rejected", "result_rejected") for e in events)
        assert [p["code"] for p in problems(hall)] == ["operator_record_refused"]
    finally:
        hall.stop()
    assert hall.plies("fake1") == full_counts(len(WANT))
    with sqlite3.connect(hall.journal) as db:
        assert db.execute("SELECT COUNT(*) FROM entries WHERE source = 'operator'").fetchone()[0] == 0
    assert hall.log().count("records come only from an operator") == 1


def test_a_retained_command_is_ignored_with_mqtt_5(tmp_path: Path, broker: Broker) -> None:
    """A ``set`` published with retain=1 while the bridge is connected is not carried out (MQTT 5)."""
    import time

    from tests.e2e.helpers import start_daemon

    hall = Hall(tmp_path, broker)
    hall.daemon.terminate()
    hall.daemon.wait(15)
    cfg = tmp_path / "c.toml"
    cfg.write_text(cfg.read_text().replace("[mqtt]\n", "[mqtt]\nprotocol = 5\n"))
    hall.daemon = start_daemon(cfg, tmp_path / "daemon.log")
    try:
        hall.board("board1", "fake1").start()
        hall.sub.wait_for(lambda: len(unique_moves(hall.sub.events("fake1"))) >= 2, 30, "two plies")
        time.sleep(1)
        before = len(hall.sub.messages)
        hall.sub.publish("touchmove/boards/fake1/set", b'{"command":"new_game","transaction":"r1"}', retain=True)
        topic = "touchmove/boards/fake1/response"
        hall.sub.wait_for(lambda: any(m.topic == topic for m in hall.sub.messages[before:]), 10, "the reply")
        reply = next(m.json() for m in hall.sub.messages[before:] if m.topic == topic)
        assert reply["status"] == "error" and "retained" in reply["error"] and reply["transaction"] == "r1"
        hall.sub.publish("touchmove/boards/fake1/set", b"", retain=True)      # clear it
        hall.wait_game("fake1")
        assert [e["game"] for e in hall.sub.events("fake1") if e["type"] == "game_start"] in ([], [1])
    finally:
        hall.stop()
    assert hall.plies("fake1") == full_counts(len(WANT))


def test_a_board_json_the_firmware_refuses_is_an_alert_the_arbiter_sees(tmp_path: Path, broker: Broker) -> None:
    """The real firmware (MicroPython) with a board.json holding a bad value: it does not scan, says why in an
    ``error`` record every 10 s, and the bridge raises one ``board_error`` alert on the board's events (MQTT and
    the journal) naming the fault and what to do."""
    from tests.e2e.helpers import REPO, Subscriber, start_daemon, write_config
    from tests.e2e.rig import firmware_argv
    from touchmove.sim.ptyboard import PtyBoard

    flash = tmp_path / "flash"
    flash.mkdir()
    (flash / "board.json").write_text('{"profile": "hc165", "scan_hz": 5}')
    journal = tmp_path / "journal.sqlite3"
    config = write_config(tmp_path / "bridge.toml", broker_port=broker.port, ports=[str(tmp_path / "ttyBOARD*")],
                          journal=journal, rescan_s=0.2)
    sub = Subscriber(broker.port)
    daemon = start_daemon(config, tmp_path / "daemon.log")
    # main.py as a board runs it: the fake machine module, board.json in the current folder
    fakes = REPO / "tests" / "firmware" / "fakes"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOUCHMOVE_")}
    env.update(MICROPYPATH=f"{fakes}:{REPO / 'firmware'}:.frozen", TOUCHMOVE_PROFILE="board.json")
    board = PtyBoard(firmware_argv(), str(tmp_path / "ttyBOARD0"), env=env, cwd=str(flash), stderr=None)
    try:
        board.plug()
        board.start()

        def alerts() -> list[dict[str, object]]:
            return [e for e in sub.events() if e.get("type") == "alert" and e.get("code") == "board_error"]

        sub.wait_for(lambda: bool(alerts()), 60, "a board_error alert on MQTT")
        time.sleep(12)     # the board repeats its error every 10 s: still one alert
        got = alerts()
        assert len(got) == 1, got
        detail = got[0]["detail"]
        assert isinstance(detail, dict)
        assert "scan_hz" in str(detail["why"]) and "firmware not started" in str(detail["why"])
        assert "board.json" in str(detail["message"])
    finally:
        board.stop()
        daemon.terminate()
        daemon.wait(10)
        sub.close()
    with sqlite3.connect(journal) as db:
        codes = [json.loads(p).get("code") for (p,) in db.execute("SELECT payload FROM events")]
    assert codes.count("board_error") == 1, "the alert is not journaled"
