"""The shipped deployment files stay in step with the code that reads or writes them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from touchmove.config import load
from touchmove.mqtt.auth import generate, mosquitto_conf

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


ROUNDS = [{"number": 1, "boards": [{"board_id": "b1", "white": "A", "black": "B"}]}]

def test_shipped_acl_is_what_broker_auth_writes(tmp_path: Path) -> None:
    generate(tmp_path, ["hall-a", "hall-b", "hall-c"], ["arbiters"], ["screens"])
    assert (DEPLOY / "mosquitto" / "acl.example").read_text() == (tmp_path / "mosquitto" / "acl").read_text()
    assert (DEPLOY / "mosquitto" / "viewers.acl.example").read_text() == (
        tmp_path / "mosquitto" / "viewers.acl").read_text()
    assert (DEPLOY / "mosquitto" / "touchmove.conf").read_text() == mosquitto_conf(Path("/etc/touchmove/event"))
    shipped = (DEPLOY / "nats" / "auth.conf").read_text() if (DEPLOY / "nats" / "auth.conf").exists() else None
    assert shipped is None, "no real passwords are shipped"
    example = (DEPLOY / "nats" / "auth.conf.example").read_text()
    generated = re.sub(r'password: "[^"]*"', "", (tmp_path / "nats" / "auth.conf").read_text())
    assert re.sub(r'password: "[^"]*"', "", example).endswith(generated)


def test_example_bridge_configuration_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mqtt-password").write_text("pw\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    cfg = load(DEPLOY / "bridge-hall-a.toml.example")
    assert cfg.mqtt.password == "pw" and len(cfg.mqtt.endpoints) == 3 and cfg.mqtt.base_topic == "hall-a"


def test_example_broker_section_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from touchmove.broadcast.tournament import parse_tournament

    (tmp_path / "mqtt-password").write_text("pw\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    data = tomllib.loads((DEPLOY / "tournament-brokers.toml.example").read_text())
    t = parse_tournament({"event": "E", "round": 1, "rounds": ROUNDS, **data})
    assert len(t.brokers[0].endpoints) == 3 and t.brokers[0].password == "pw"


def test_units_name_the_credentials_the_examples_read() -> None:
    bridge = (DEPLOY / "systemd" / "touchmove-bridge@.service").read_text()
    assert "LoadCredential=mqtt-password:" in bridge and "StateDirectory=touchmove" in bridge
    assert "ExecStartPre=-" in bridge, "a failed doctor check must not keep the bridge down"
    assert 'ENV{ID_MM_DEVICE_IGNORE}="1"' in (DEPLOY / "udev" / "99-touchmove.rules").read_text()


def test_the_udev_rules_cover_every_board_the_bridge_serves() -> None:
    """Each shipped rule (touchmove's boards, the vendors'): group dialout (the unit's supplementary group), a
    name under /dev/touchmove/ (the sample's ports pattern), ModemManager kept away from serial ports; the
    unit lets the bridge open hidraw nodes (Chessnut) as well as ttyACM/ttyUSB."""
    from touchmove import boards
    from touchmove.samples import BRIDGE

    rules = {}
    for path in sorted((DEPLOY / "udev").glob("*.rules")):
        text = path.read_text()
        joined = text.replace("\\\n", " ")
        rules[path.name] = [line.lstrip("#") for line in joined.splitlines()
                            if line.lstrip("#").startswith("SUBSYSTEM==")]
    assert set(rules) == {"99-touchmove.rules", "99-touchmove-boards.rules"}
    for name, lines in rules.items():
        for line in lines:
            if "hall-a" in line:
                continue          # an extra name for a board the rule above has given its group already
            assert 'GROUP="dialout"' in line and 'MODE="0660"' in line, (name, line)
            if not line.startswith('SUBSYSTEM=="hidraw"'):
                assert 'ENV{ID_MM_DEVICE_IGNORE}="1"' in line and 'SYMLINK+="touchmove/' in line, (name, line)
    assert f'ATTRS{{idVendor}}=="{boards.CHESSNUT_VID:04x}"' in " ".join(rules["99-touchmove-boards.rules"])
    assert 'ports = ["/dev/touchmove/*"]' in BRIDGE
    unit = (DEPLOY / "systemd" / "touchmove-bridge@.service").read_text()
    assert "SupplementaryGroups=dialout" in unit and "DeviceAllow=char-hidraw rw" in unit
