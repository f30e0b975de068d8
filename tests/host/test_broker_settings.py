"""Broker URL lists, secrets from the environment or a file, and client TLS settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from touchmove.config import ConfigError, from_dict
from touchmove.mqtt.brokers import BrokerSettingError, Endpoint, Endpoints, parse_urls, read_secret

ROUNDS = [{"number": 1, "boards": [{"board_id": "b1", "white": "A", "black": "B"}]}]

def test_url_list_is_the_cluster() -> None:
    cfg = from_dict({"mqtt": {"urls": ["mqtt://n1:1883", "mqtt://n2:1884", "n3"]}}).mqtt
    assert [e.url for e in cfg.endpoints] == ["mqtt://n1:1883", "mqtt://n2:1884", "mqtt://n3:1883"]
    tls = from_dict({"mqtt": {"urls": ["mqtts://n1", "mqtt://n2:8884"], "ca_file": "/ca.pem"}}).mqtt
    assert all(e.tls for e in tls.endpoints), "TLS applies to every node"
    with pytest.raises(ConfigError, match="not both"):
        from_dict({"mqtt": {"url": "mqtt://a", "urls": ["mqtt://b"]}})
    with pytest.raises(ConfigError, match="urls"):
        from_dict({"mqtt": {"urls": []}})


def test_endpoints_rotate_and_say_when_a_round_failed() -> None:
    nodes = Endpoints(parse_urls(["a:1", "b:2", "c:3"]), start=1)
    assert nodes.current == Endpoint("b", 2)
    assert nodes.failed() is False and nodes.current.host == "c"
    assert nodes.failed() is False and nodes.current.host == "a"
    assert nodes.failed() is True and nodes.current.host == "b"    # all three tried: back off
    assert nodes.rounds_failed == 1            # the next round waits longer for a CONNACK
    nodes.connected()
    assert nodes.failed() is False and nodes.rounds_failed == 0


def test_password_from_file_env_and_default_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    assert from_dict({"mqtt": {"username": "hall-a", "password_file": str(secret)}}).mqtt.password == "s3cret"
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    cfg = from_dict({"mqtt": {"password_file": "$CREDENTIALS_DIRECTORY/pw"}})
    assert cfg.mqtt.password == "s3cret"
    monkeypatch.setenv("HALL_A_PW", "from-env")
    assert from_dict({"mqtt": {"password_env": "HALL_A_PW"}}).mqtt.password == "from-env"
    monkeypatch.setenv("TOUCHMOVE_MQTT_PASSWORD", "default-env")
    monkeypatch.setenv("TOUCHMOVE_MQTT_USERNAME", "hall-b")
    cfg = from_dict({})
    assert (cfg.mqtt.username, cfg.mqtt.password) == ("hall-b", "default-env")
    assert from_dict({"mqtt": {"password": "toml"}}).mqtt.password == "toml"


def test_bad_secrets_are_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE", raising=False)
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    with pytest.raises(ConfigError, match="cannot read the secret file"):
        from_dict({"mqtt": {"password_file": str(tmp_path / "missing")}})
    with pytest.raises(ConfigError, match="NOPE"):
        from_dict({"mqtt": {"password_env": "NOPE"}})
    with pytest.raises(ConfigError, match="CREDENTIALS_DIRECTORY"):
        from_dict({"mqtt": {"password_file": "$CREDENTIALS_DIRECTORY/pw"}})
    with pytest.raises(ConfigError, match="one of password"):
        from_dict({"mqtt": {"password": "a", "password_env": "B"}})
    with pytest.raises(ConfigError, match="cert_file"):
        from_dict({"mqtt": {"key_file": "/k.pem"}})
    with pytest.raises(BrokerSettingError):
        read_secret(None, env="NOPE", environ={})


def test_client_certificate_turns_tls_on() -> None:
    cfg = from_dict({"mqtt": {"url": "mqtt://b:8883", "cert_file": "/c.pem", "key_file": "/k.pem"}}).mqtt
    assert cfg.tls and (cfg.cert_file, cfg.key_file) == ("/c.pem", "/k.pem")


def test_broadcaster_broker_urls_and_secret_file(tmp_path: Path) -> None:
    from touchmove.broadcast.tournament import parse_tournament

    secret = tmp_path / "arbiters.password"
    secret.write_text("pw\n")
    t = parse_tournament({"event": "E", "round": 1, "rounds": ROUNDS,
                          "brokers": [{"urls": ["mqtt://n3:1883", "mqtt://n1:1883"], "bases": ["hall-a"],
                                       "username": "arbiters", "password_file": str(secret),
                                       "ca_file": "/ca.pem", "cert_file": "/c.pem", "key_file": "/k.pem"}]})
    b = t.brokers[0]
    assert [e.url for e in b.endpoints] == ["mqtts://n3:1883", "mqtts://n1:1883"]
    assert (b.username, b.password, b.cert_file) == ("arbiters", "pw", "/c.pem")


def test_journal_is_created_owner_only(tmp_path: Path) -> None:
    from touchmove.bridge.journal import Journal

    journal = Journal.open(tmp_path / "j.sqlite3")
    journal.close()
    for f in tmp_path.iterdir():
        assert f.stat().st_mode & 0o077 == 0, f"{f.name} is readable by others"
