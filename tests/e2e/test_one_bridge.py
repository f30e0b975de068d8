"""One journal, one bridge (issue 21), end to end with ``touchmove run`` processes and a private Mosquitto: a
second bridge on a journal refuses to start with one line naming the first; two bridges given one configured
``client_id`` (on their own journals) and a client that borrows that id never push a bridge off the broker."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import paho.mqtt.client as mqtt

from tests.e2e.helpers import REPO, Broker, unique_moves, write_config
from tests.e2e.test_bridge_hardening import WANT, Hall, full_counts


def test_a_second_bridge_on_a_journal_refuses_naming_the_holder(tmp_path: Path, broker: Broker) -> None:
    hall = Hall(tmp_path, broker)
    try:
        hall.board("board1", "fake1").start()
        cfg = write_config(tmp_path / "second.toml", broker_port=broker.port, ports=[str(tmp_path / "none*")],
                           journal=hall.journal)
        second = subprocess.run([sys.executable, "-m", "touchmove.cli", "run", "--config", str(cfg)], cwd=REPO,
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 1 and second.stdout == ""
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "in use by another bridge" in lines[0]
        assert f"process {hall.daemon.pid} on " in lines[0]
        hall.wait_game("fake1")
    finally:
        hall.stop()
    assert hall.plies("fake1") == full_counts(len(WANT))


def test_one_configured_client_id_never_pushes_a_bridge_off(tmp_path: Path, broker: Broker) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    halls = []
    for name in ("a", "b"):
        cfg = tmp_path / name / "c.toml"
        halls.append(Hall(tmp_path / name, broker))
        text = (tmp_path / name / "c.toml").read_text().replace("[mqtt]\n", '[mqtt]\nclient_id = "bridge-hall-a"\n')
        cfg.write_text(text)
    for hall in halls:                            # restart each with the shared client id
        hall.daemon.terminate()
        hall.daemon.wait(15)
        (hall.tmp / "daemon.log").unlink()
        from tests.e2e.helpers import start_daemon
        hall.daemon = start_daemon(hall.tmp / "c.toml", hall.tmp / "daemon.log")
    time.sleep(2)
    squatter = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="bridge-hall-a")   # the example's id
    squatter.connect("127.0.0.1", broker.port)
    squatter.loop_start()
    try:
        halls[0].board("board1", "fa").start()
        halls[1].board("board1", "fb").start()
        halls[0].wait_game("fa")
        halls[1].wait_game("fb")
        for hall in halls:
            assert hall.log().count("INFO touchmove.bridge.mqtt_link: connected to") == 1, hall.log()[-2000:]
            assert unique_moves(hall.sub.events("fa" if hall is halls[0] else "fb")) == WANT
    finally:
        squatter.loop_stop()
        squatter.disconnect()
        for hall in halls:
            hall.stop()
