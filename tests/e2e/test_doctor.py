"""`touchmove doctor` against a real, access-controlled Mosquitto and a real bridge."""

from __future__ import annotations

import getpass
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.helpers import REPO, Broker, free_port, start_daemon
from touchmove.brokerauth import generate


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
    try:
        deadline = time.monotonic() + 30
        while "connected to" not in (tmp_path / "daemon.log").read_text(errors="replace"):
            assert time.monotonic() < deadline, "the bridge did not connect"
            time.sleep(0.1)
        good = doctor("--config", str(bridge), "--tournament", str(tournament))
        assert good.returncode == 0, good.stdout + good.stderr
        assert "connected (user hall-a), QoS 1 round trip" in good.stdout
        assert "connected (user arbiters), QoS 1 round trip" in good.stdout
        assert "bridge hall-a: online" in good.stdout and "ms from this host" in good.stdout
        assert "journal" in good.stdout and "ready" in good.stdout.splitlines()[-1]
        assert "checkpoint key" in good.stdout and "owner-only, signs the engine checkpoints" in good.stdout

        (auth / "secrets" / "arbiters.password").write_text("wrong\n")
        dead = free_port()
        loose = tmp_path / "loose.key"   # a key anyone may change would make the bridge unpickle their bytes
        loose.write_text("ab" * 32 + "\n")
        loose.chmod(0o666)
        bad = tmp_path / "bad.toml"
        bad.write_text(bridge.read_text().replace(f'url = "mqtt://127.0.0.1:{broker.port}"',
                                                  f'urls = ["mqtt://127.0.0.1:{dead}", "mqtt://127.0.0.1:{broker.port}"]')
                       .replace(str(tmp_path / "var"), str(tmp_path / "missing"))
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
        broker.stop()
