"""A board that does not show up gets an explanation: ``touchmove run`` says at INFO what it watches and what
it found (each port opened or refused with the reason and the fix, silent ports, boards bound), and
``touchmove doctor --ports`` lists the serial devices with their USB ids and whether a board answers."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import serial
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.cli.conftest import touchmove
from touchmove.bridge import port_report
from touchmove.broadcast import lichess_standin
from touchmove.config import BoardPort, UsbMatch
from touchmove.sim import demo
from touchmove.sim.local_broker import LocalBroker
from touchmove.sim.ptyboard import PtyBoard


@pytest.mark.parametrize("exc, reason, fix", [
    (PermissionError(errno.EACCES, "Permission denied", "/dev/ttyACM0"), "permission denied", "dialout"),
    (serial.SerialException(errno.EACCES, "could not open port /dev/ttyACM0: [Errno 13] Permission denied"),
     "permission denied", "dialout"),
    (serial.SerialException(errno.EBUSY, "could not open port /dev/ttyACM0: [Errno 16] Device or resource busy"),
     "busy", "ModemManager"),
    (serial.SerialException(errno.EAGAIN, "Could not exclusively lock port /dev/ttyACM0"), "locked", "ModemManager"),
    (serial.SerialException("Could not configure port: (25, 'Inappropriate ioctl for device')"), "not a tty",
     "not a serial device"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory"), "no such device", "doctor --ports"),
])
def test_each_refusal_has_a_reason_and_a_fix(exc: BaseException, reason: str, fix: str) -> None:
    said, how = port_report.diagnose("/dev/ttyACM0", exc)
    assert said.startswith(reason) and fix in how


def test_what_is_watched_names_paths_and_usb_ids() -> None:
    line = port_report.describe_watch(["/dev/touchmove/*"], [UsbMatch(0x2E8A, 0x0005), UsbMatch(0x303A, 0x4001)])
    assert line == "paths /dev/touchmove/* and USB ids 2e8a:0005, 303a:4001"


def test_what_is_watched_names_the_vendor_boards_too(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 38: a DGT-only configuration was logged as "watching for boards at nothing ... (baud 115200)"."""
    boards = [BoardPort("dgt", port="/dev/touchmove/dgt-*"), BoardPort("chessnut", vid=0x2D80)]
    report = port_report.PortReport([], [], 115200, boards=boards)
    with caplog.at_level("INFO", logger="touchmove.bridge"):
        report.started()
        report.scanned([])
    said = caplog.text
    assert "watching for boards at dgt boards at /dev/touchmove/dgt-* and chessnut boards at USB id 2d80:*" in said
    assert "nothing" not in said and "baud" not in said
    assert "no port matches dgt boards at /dev/touchmove/dgt-*" in said
    both = port_report.describe_watch(["/dev/touchmove/*"], [], 115200, boards[:1])
    assert both == "paths /dev/touchmove/* (baud 115200) and dgt boards at /dev/touchmove/dgt-*"


def test_a_port_kept_locked_is_said_again_every_minute(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    report = port_report.PortReport(["/dev/x"], [], 115200, clock=lambda: now[0])
    locked = serial.SerialException(errno.EAGAIN, "Could not exclusively lock port /dev/x")
    with caplog.at_level("WARNING", logger="touchmove.bridge"):
        for t in range(0, 130, 2):            # a rescan every 2 s for 130 s
            now[0] = float(t)
            report.refused_port("/dev/x", locked)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 3 and said[0].startswith("port /dev/x refused: locked by another program")
    assert said[1].startswith("port /dev/x still refused after 60 s: locked") and "after 120 s" in said[2]


def test_a_port_silent_for_long_is_said_once() -> None:
    now = [0.0]
    report = port_report.PortReport(["/dev/x"], [], 115200, clock=lambda: now[0])
    report.opened("/dev/x")
    now[0] = port_report.SILENT_AFTER_S - 0.1
    assert report.check_silent() == []
    now[0] = port_report.SILENT_AFTER_S + 0.1
    assert report.check_silent() == ["/dev/x"]
    assert report.check_silent() == []          # once


@pytest.fixture
def silent_tty(tmp_path: Path) -> Iterator[str]:
    """A pseudo-terminal where nothing answers (a board with other firmware, or the wrong baud rate)."""
    master, slave = os.openpty()
    link = tmp_path / "silent0"
    link.symlink_to(os.ttyname(slave))
    try:
        yield str(link)
    finally:
        os.close(slave)
        os.close(master)


@pytest.fixture
def sim_board(tmp_path: Path) -> Iterator[PtyBoard]:
    """The real firmware's sim board (under CPython) on a pseudo-terminal, as the demo plugs it."""
    timeline = tmp_path / "timeline.jsonl"
    demo.write_timeline(timeline, demo.timeline_for(demo.read_game(demo.DEFAULT_PGN))[:4])
    env = dict(os.environ, TOUCHMOVE_SIM=str(timeline), TOUCHMOVE_SIM_EXIT="0", TOUCHMOVE_BOARD="portsboard")
    board = PtyBoard([sys.executable, "-m", "touchmove.sim.micropython_shim", str(demo.FIRMWARE / "main.py")],
                     str(tmp_path / "board0"), env=env)
    board.plug()
    board.start()
    try:
        yield board
    finally:
        board.stop()


def test_run_says_what_it_watches_and_found(tmp_path: Path, broker: LocalBroker, silent_tty: str,
                                            sim_board: PtyBoard) -> None:
    not_a_tty = tmp_path / "notes.txt"
    not_a_tty.write_text("not a port\n")
    config = tmp_path / "bridge.toml"
    config.write_text(f'[mqtt]\nurl = "{broker.url}"\n[serial]\nports = []\nusb = [{{ vid = 0x303A, pid = 0x4001 }}]\n'
                      f'rescan_s = 0.5\n[journal]\npath = "{tmp_path}/journal.sqlite3"\n')
    proc = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config", str(config),
                             "--port", str(not_a_tty), "--port", silent_tty, "--port", sim_board.link_path,
                             "--port", str(tmp_path / "ttyACM9")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(port_report.SILENT_AFTER_S + 4)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "DEBUG" not in err            # all of this at the default level
    assert "watching for boards at paths" in err and "USB ids 303a:4001" in err and "ports matching: " in err
    assert f"port {not_a_tty} refused: not a tty" in err
    assert f"port {tmp_path / 'ttyACM9'} refused: no such device" in err
    assert f"port {silent_tty}: open for 5 s, nothing received" in err and "wrong" not in err.split(silent_tty)[0]
    assert "flash touchmove's" in err and "baudrate" in err
    assert f"port {sim_board.link_path}: board portsboard bound" in err
    assert err.count("refused: not a tty") == 1      # said once, not at every rescan


def test_doctor_lists_ports_and_who_answers(tmp_path: Path, silent_tty: str, sim_board: PtyBoard) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text(f'[serial]\nports = ["{silent_tty}", "{sim_board.link_path}"]\n')
    time.sleep(1.0)   # the firmware has started
    done = touchmove("doctor", "--ports", "--config", str(config), "--timeout", "3")
    out = done.stdout
    assert f"ok   port {sim_board.link_path} (-): touchmove board portsboard answers" in out, out
    assert f"warn port {silent_tty} (-): nothing received" in out, out
    assert "flash touchmove's" in out
    assert "Traceback" not in done.stderr


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.integers(-5, 200)), st.text(max_size=80))
def test_any_open_error_gets_a_reason_and_a_fix(code: int | None, text: str) -> None:
    exc = OSError(code, text) if code is not None else OSError(text)
    reason, fix = port_report.diagnose("/dev/ttyACM0", exc)
    assert reason.strip() and fix.strip() and "\n" not in reason


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_the_lichess_stand_in_reads_any_body(body: str) -> None:
    for game in lichess_standin.read_games(body):
        assert isinstance(game["tags"], dict) and ("moves" in game) != ("error" in game)


def test_the_lichess_stand_in_reads_a_round() -> None:
    games = lichess_standin.read_games('[White "A"]\n[Result "1-0"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 '
                                       '4. Qxf7# 1-0\n\n[White "B"]\n\n1. e4 Ke7 2. Ke9 *\n')
    assert games[0]["moves"] == 7 and games[0]["tags"]["Result"] == "1-0"
    assert "error" in games[1]


def test_the_sample_and_the_udev_rule_know_the_esp32_s3() -> None:
    import tomllib

    from touchmove import samples
    from touchmove.config import from_dict

    usb = {(m.vid, m.pid) for m in from_dict(tomllib.loads(samples.BRIDGE)).serial.usb}
    assert {(0x2E8A, 0x0005), (0x303A, 0x4001)} <= usb
    rule = (Path(__file__).resolve().parents[2] / "deploy" / "udev" / "99-touchmove.rules").read_text()
    active = [line for line in rule.splitlines() if line.startswith("SUBSYSTEM")]
    assert any('"303a"' in line and '"4001"' in line for line in active)
    assert all('ENV{ID_MM_DEVICE_IGNORE}="1"' in line or line.endswith("\\") for line in active)
    assert port_report.KNOWN_USB_IDS[(0x303A, 0x4001)].startswith("ESP32-S3")


def test_a_port_locked_by_a_killed_bridge_is_free_at_once_and_a_live_holder_is_named(tmp_path: Path) -> None:
    """Issue 40: the lock pyserial's exclusive open takes dies with its process (kill -9): the port opens again
    at once, every time; while a process holds it, the refusal names that process."""
    master, slave = os.openpty()
    link = tmp_path / "ttyBOARD0"
    link.symlink_to(os.ttyname(slave))
    holder = ("import serial, sys, time\nport = serial.Serial(sys.argv[1], 115200, exclusive=True)\n"
              "print('held', flush=True)\ntime.sleep(60)\n")
    try:
        for _ in range(20):
            proc = subprocess.Popen([sys.executable, "-c", holder, str(link)], stdout=subprocess.PIPE, text=True)
            assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
            with pytest.raises(serial.SerialException) as refused:
                serial.Serial(str(link), 115200, exclusive=True)
            reason, _ = port_report.diagnose(str(link), refused.value)
            assert reason.startswith(f"locked by another program (pid {proc.pid}: ") and "-c" in reason, reason
            proc.kill()
            proc.wait(5)
            serial.Serial(str(link), 115200, exclusive=True).close()      # free the moment the holder is gone
    finally:
        os.close(slave)
        os.close(master)
