"""The bridge's TOML configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from touchmove.config import ConfigError, from_dict, load, parse_broker_url

EXAMPLE = """
[mqtt]
url = "mqtts://bridge:s%40cret@broker.example:8884"
base_topic = "club/touchmove"
ca_file = "/etc/touchmove/ca.pem"
protocol = 5

[serial]
ports = ["/dev/serial/by-id/usb-touchmove*", "/dev/ttyACM0"]
usb = [{ vid = 0x2E8A, pid = 0x0005 }, { serial_number = "E6614103E7" }]
rescan_s = 1

[engine]
settle_ms = 150

[journal]
path = "/var/lib/touchmove/journal.sqlite3"
"""


def test_example_file(tmp_path: Path) -> None:
    path = tmp_path / "bridge.toml"
    path.write_text(EXAMPLE)
    cfg = load(path)
    assert (cfg.mqtt.host, cfg.mqtt.port, cfg.mqtt.tls) == ("broker.example", 8884, True)
    assert (cfg.mqtt.username, cfg.mqtt.password) == ("bridge", "s@cret")
    assert cfg.mqtt.base_topic == "club/touchmove" and cfg.mqtt.protocol == 5
    assert cfg.serial.ports[1] == "/dev/ttyACM0" and cfg.serial.usb[0].vid == 0x2E8A
    assert cfg.serial.usb[1].serial_number == "E6614103E7" and cfg.serial.rescan_s == 1.0
    assert cfg.settle_ms == 150 and cfg.journal.endswith("journal.sqlite3")


def test_defaults() -> None:
    cfg = from_dict({})
    assert cfg.mqtt.url == "mqtt://127.0.0.1:1883" and cfg.mqtt.base_topic == "touchmove"
    assert cfg.serial.ports == () and cfg.settle_ms == 200


@pytest.mark.parametrize("data, message", [
    ({"mqtt": {"url": "http://x"}}, "scheme"),
    ({"mqtt": {"base_topic": "a/#"}}, "base_topic"),
    ({"mqtt": {"protocol": 3}}, "protocol"),
    ({"mqtt": {"colour": "red"}}, "unknown key"),
    ({"serial": {"ports": "/dev/ttyACM0"}}, "wrong type"),
    ({"serial": {"rescan_s": 0}}, "rescan_s"),
    ({"engine": {"settle_ms": True}}, "number"),
    ({"engine": {"settle_ms": -1}}, "settle_ms"),
    ({"hall": {}}, "unknown section"),
    ({"boards": {"bad\tid": {"usb_serial": "X"}}}, "board id is"),
    ({"boards": {"b1": {"usb_serial": 5}}}, "wrong type"),
    ({"boards": {"b1": {"serial": "X"}}}, "unknown key"),
])
def test_bad_configs(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(data)


def test_unreadable_and_malformed(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[mqtt\n")
    with pytest.raises(ConfigError):
        load(bad)


def test_broker_url_defaults() -> None:
    assert parse_broker_url("localhost") == {"host": "localhost", "port": 1883, "tls": False}
    assert parse_broker_url("mqtts://h")["port"] == 8883


def test_events_qos_is_0_or_1() -> None:
    assert from_dict({}).mqtt.events_qos == 1
    assert from_dict({"mqtt": {"events_qos": 0}}).mqtt.events_qos == 0
    with pytest.raises(ConfigError, match=r"\[mqtt\] events_qos must be 0 or 1"):
        from_dict({"mqtt": {"events_qos": 2}})
    with pytest.raises(ConfigError, match="events_qos must be a number"):
        from_dict({"mqtt": {"events_qos": True}})
