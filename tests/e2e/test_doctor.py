"""`touchmove doctor` against a real, access-controlled Mosquitto and a real bridge."""

from __future__ import annotations

import getpass
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.helpers import REPO, Broker, free_port, start_daemon
from touchmove.mqtt.auth import generate
from touchmove.sim.ptyboard import PtyBoard


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "touchmove.cli", "doctor", "--timeout", "3", *args],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


def test_doctor_passes_a_good_deployment_and_names_each_fault(tmp_path: Path) -> None:
    auth = tmp_path / "auth"
    broker = Broker(tmp_path)
    generate(auth, ["hall-a"], ["arbiters"], ["screens"], broker.port, free_port(), "127.0.0.1")
    broker.conf.write_text((auth / "mosquitto" / "touchmove.conf").read_text()
                           + f"user {getpass.getuser()}\npersistence false\n")
    broker.start()
    (tmp_path / "var").mkdir()
    bridge = tmp_path / "bridge.toml"
    bridge.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\nbase_topic = "hall-a"\nusername = "hall-a"\n'
                      f'password_file = "{auth / "secrets" / "hall-a.password"}"\n\n'
                      f'[serial]\nports = ["{tmp_path / "board*"}"]\n\n'
                      f'[journal]\npath = "{tmp_path / "var" / "j.db"}"\n')
    tournament = tmp_path / "tournament.toml"
    tournament.write_text(
        f'event = "E"\nround = 1\n[broadcast]\noutput_dir = "{tmp_path / "out"}"\nport = {free_port()}\n'
        f'token = "t"\n[[brokers]]\nurl = "mqtt://127.0.0.1:{broker.port}"\nbases = ["hall-a"]\n'
        f'username = "arbiters"\npassword_file = "{auth / "secrets" / "arbiters.password"}"\n'
        '[[rounds]]\nnumber = 1\n[[rounds.boards]]\nboard_id = "b1"\nwhite = "A"\nblack = "B"\n')
    daemon = start_daemon(bridge, tmp_path / "daemon.log")
    (tmp_path / "still.jsonl").write_text("")
    board = PtyBoard([sys.executable, str(REPO / "tests" / "e2e" / "fake_board.py"), str(tmp_path / "still.jsonl"),
                      "b1"], str(tmp_path / "board0"), stderr=None)
    try:
        deadline = time.monotonic() + 30
        while "connected to" not in (tmp_path / "daemon.log").read_text(errors="replace"):
            assert time.monotonic() < deadline, "the bridge did not connect"
            time.sleep(0.1)
        unbound = doctor("--config", str(bridge), "--tournament", str(tournament))
        assert unbound.returncode == 1 and "ready" not in unbound.stdout.splitlines()[-1], unbound.stdout
        assert "FAIL round 1: 1 of 1 paired boards not bound: b1 (1 never seen by a bridge)" in unbound.stdout
        board.plug()
        board.start()
        while "board b1 bound" not in (tmp_path / "daemon.log").read_text(errors="replace"):
            assert time.monotonic() < deadline + 30, "the board was not bound"
            time.sleep(0.1)
        good = doctor("--config", str(bridge), "--tournament", str(tournament))
        assert good.returncode == 0, good.stdout + good.stderr
        assert "connected (user hall-a), QoS 1 round trip" in good.stdout
        assert "connected (user arbiters), QoS 1 round trip" in good.stdout
        assert "bridge hall-a: online" in good.stdout and "ms from this host" in good.stdout
        assert "journal" in good.stdout and "ready" in good.stdout.splitlines()[-1]
        assert "checkpoint key" in good.stdout and "owner-only, signs the engine checkpoints" in good.stdout
        assert f"ok   serial {tmp_path / 'board0'}: held by a running bridge" in good.stdout
        assert "ok   round 1: all 1 paired boards bound" in good.stdout
        assert "ok   broker: no games kept (retained) for the round's boards" in good.stdout

        (auth / "secrets" / "arbiters.password").write_text("wrong\n")
        dead = free_port()
        loose = tmp_path / "loose.key"   # a key anyone may change would make the bridge unpickle their bytes
        loose.write_text("ab" * 32 + "\n")
        loose.chmod(0o666)
        bad = tmp_path / "bad.toml"
        bad.write_text(bridge.read_text().replace(f'url = "mqtt://127.0.0.1:{broker.port}"',
                                                  f'urls = ["mqtt://127.0.0.1:{dead}", "mqtt://127.0.0.1:{broker.port}"]')
                       .replace(str(tmp_path / "var"), str(bridge / "missing"))       # under a file
                       + f'checkpoint_key = "{loose}"\n')
        out = doctor("--config", str(bad), "--tournament", str(tournament))
        text = out.stdout
        assert out.returncode == 1 and "Traceback" not in out.stderr, text + out.stderr
        assert f"FAIL broker mqtt://127.0.0.1:{dead}: not reachable" in text
        assert "FAIL broker" in text and "connection refused (user arbiters)" in text and "password" in text
        assert "FAIL journal" in text and "does not exist" in text
        assert "FAIL checkpoint key" in text and "writable by others" in text
        assert text.count("->") >= 3, "every failure says what to do"
    finally:
        daemon.terminate()
        daemon.wait(10)
        board.stop()
        broker.stop()


def _emulator(protocol: str, tmp: Path, name: str) -> PtyBoard:
    timeline = tmp / f"timeline-{name}.jsonl"
    timeline.write_text("")           # the board stands in its start position, says who it is when asked
    argv = ([sys.executable, "-m", "touchmove.sim.dgt", str(timeline), "--serial", "24680"] if protocol == "dgt"
            else [sys.executable, "-m", "touchmove.sim.scanning", protocol, str(timeline)])
    board = PtyBoard(argv, str(tmp / name), stderr=None)
    board.plug()
    board.start()
    return board


def test_doctor_asks_each_vendor_board_in_its_own_protocol(tmp_path: Path) -> None:
    """Issue 38: with DGT and ChessLink boards in [serial] boards, doctor opens each port at the protocol's
    settings and the board answers with its serial number (DGT) or version (ChessLink); a board that is not
    there is named with the fix; --ports lists them by protocol; a journal folder `run` creates is no FAIL."""
    dgt, chesslink = _emulator("dgt", tmp_path, "dgt0"), _emulator("chesslink", tmp_path, "cl0")
    try:
        config = tmp_path / "bridge.toml"
        config.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{free_port()}"\n[serial]\nboards = [\n'
                          f'  {{ port = "{tmp_path}/dgt*", protocol = "dgt" }},\n'
                          f'  {{ port = "{tmp_path}/cl*", protocol = "chesslink" }},\n'
                          f'  {{ port = "{tmp_path}/nut*", protocol = "chessnut" }},\n]\n'
                          f'[journal]\npath = "{tmp_path}/journal/touchmove.sqlite3"\n')
        time.sleep(0.5)
        out = doctor("--config", str(config)).stdout
        assert f"ok   serial {tmp_path}/dgt0: dgt board dgt-24680 answers (9600 8N1, serial number 24680" in out, out
        assert f"ok   serial {tmp_path}/cl0: chesslink board chesslink-cl0 answers (38400 7O1, version" in out, out
        assert f"warn serial: no chessnut board at {tmp_path}/nut*" in out and "docs/boards.md#permissions" in out
        assert "no port patterns" not in out and "FAIL journal" not in out
        assert "journal/touchmove.sqlite3: the folder" in out and "will be created" in out
        ports = doctor("--ports", "--config", str(config)).stdout
        assert f"ok   port {tmp_path}/dgt0 (-): dgt board dgt-24680 answers" in ports, ports
        assert f"ok   port {tmp_path}/cl0 (-): chesslink board chesslink-cl0 answers" in ports, ports
    finally:
        dgt.stop()
        chesslink.stop()
