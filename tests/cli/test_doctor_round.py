"""``touchmove doctor --tournament``'s view of the round (issue 38): ready only when every paired board is bound,
and the games the broker keeps for the round's boards, an old session's told apart from the running bridge's."""

from __future__ import annotations

from touchmove.bridge.port_report import SerialDevice
from touchmove.doctor import Report, Seen, check_pairings, check_retained


def test_every_paired_board_must_be_bound() -> None:
    seen = Seen(online={"b1": True, "b2": False})
    report = Report()
    check_pairings(report, 3, ["b1", "b2", "b3"], seen)
    [(level, what, fix)] = report.lines
    assert level == "FAIL" and what == "round 3: 2 of 3 paired boards not bound: b2, b3 (1 never seen by a bridge)"
    assert "board_id" in fix and report.failed
    report = Report()
    check_pairings(report, 3, ["b1"], seen)
    assert report.lines[0][0] == "ok" and not report.failed
    # a killed bridge's boards still say online (retained): not bound unless their bridge answers
    seen = Seen(online={"b1": True}, base_of={"b1": "hall-a"}, answering=set())
    report = Report()
    check_pairings(report, 3, ["b1"], seen)
    assert report.failed and "b1" in report.lines[0][1]
    seen.answering = {"hall-a"}
    report = Report()
    check_pairings(report, 3, ["b1"], seen)
    assert not report.failed


def test_games_an_old_session_left_on_the_broker_are_said_with_how_to_start_clean() -> None:
    seen = Seen(states={"b1": {"game": 1, "ply": 33, "game_over": True, "session": "old"},
                        "b2": {"game": 2, "ply": 4, "game_over": False, "session": "live"},
                        "b3": {"game": 1, "ply": 0, "session": "live"}},
                sessions={"live"})
    report = Report()
    check_retained(report, ["b1", "b2", "b3", "b4"], seen)
    [(level, what, fix)] = report.lines
    assert level == "warn" and "for 2 board(s), 1 from a bridge session that is not running" in what
    assert "b1 (game 1, 33 plies, over)" in what and "b2 (game 2, 4 plies)" in what and "b3" not in what
    assert "docs/club.md#starting-an-event-clean" in fix
    report = Report()
    check_retained(report, ["b2"], seen)
    assert report.lines[0][:2] == ("ok", "broker: games kept (retained) for 1 board(s), by the running bridges: "
                                         "b2 (game 2, 4 plies)")


def test_ports_name_vendor_boards_and_usb_serial_chips() -> None:
    assert SerialDevice("/dev/hidraw3", 0x2D80, 0x8002).label() == \
        "/dev/hidraw3 (2d80:8002, Chessnut Air / Pro (USB HID))"
    assert SerialDevice("/dev/ttyUSB0", 0x0403, 0x6001, None, "FT232R USB UART").label() == \
        "/dev/ttyUSB0 (0403:6001, FTDI USB serial adapter, FT232R USB UART)"
