"""Auth, TLS and MQTT 5 from the bridge's configuration, against a private Mosquitto."""

from __future__ import annotations

import asyncio
import getpass
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.helpers import Broker, require_binary
from touchmove.config import from_dict
from touchmove.mqtt_bridge import MqttLink


async def _nothing(topic: str, raw: bytes, retained: bool) -> None:
    return None


def _connects(cfg_dict: dict, seconds: float = 6.0) -> bool:
    """Whether an MqttLink with this configuration gets an event acknowledged within ``seconds``."""
    acked: list[int] = []

    async def main() -> None:
        link = MqttLink(from_dict(cfg_dict).mqtt, on_command=_nothing, on_acked=acked.append, backoff_max=0.5)
        link.offer_event("touchmove/boards/x/events", b"{}", 1)
        task = asyncio.create_task(link.run())
        deadline = time.monotonic() + seconds
        while not acked and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        task.cancel()

    asyncio.run(main())
    return bool(acked)


@pytest.fixture
def secure_broker(tmp_path: Path):
    passwd = require_binary("mosquitto_passwd", "/usr/bin/mosquitto_passwd")
    openssl = require_binary("openssl", "/usr/bin/openssl")
    broker = Broker(tmp_path)
    pw = tmp_path / "passwd"
    subprocess.run([passwd, "-c", "-b", str(pw), "bridge", "s3cret"], check=True, capture_output=True)
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True)
    # started as root, mosquitto would switch to its own user, which cannot read the test's private files
    broker.conf.write_text(
        f"user {getpass.getuser()}\nlistener {broker.port} 127.0.0.1\nallow_anonymous false\npassword_file {pw}\n"
        f"certfile {tmp_path / 'cert.pem'}\nkeyfile {tmp_path / 'key.pem'}\n")
    broker.start()
    yield broker, tmp_path / "cert.pem"
    broker.stop()


def test_tls_with_ca_file_and_password(secure_broker: tuple[Broker, Path]) -> None:
    broker, ca = secure_broker
    url = f"mqtts://127.0.0.1:{broker.port}"
    good = {"mqtt": {"url": url, "username": "bridge", "password": "s3cret", "ca_file": str(ca)}}
    assert _connects(good)
    assert _connects({"mqtt": {**good["mqtt"], "protocol": 5}})
    assert not _connects({"mqtt": {**good["mqtt"], "password": "wrong"}}, seconds=3)
    assert not _connects({"mqtt": {"url": url, "username": "bridge", "password": "s3cret"}}, seconds=3)  # no CA
