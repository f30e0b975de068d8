"""Auth, TLS and MQTT 5 from the bridge's configuration, and the shipped access rules, against real brokers."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import aiomqtt
import pytest

from tests.e2e.helpers import (
    OPERA,
    REPO,
    Broker,
    free_port,
    game_moves,
    require_binary,
    simple_timeline,
    start_daemon,
    write_timeline,
)
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.config import from_dict
from touchmove.mqtt.auth import AuthError, generate
from touchmove.sim.natscluster import NatsCluster
from touchmove.sim.ptyboard import PtyBoard

FAKE = REPO / "tests" / "e2e" / "fake_board.py"


async def _nothing(topic: str, raw: bytes, retained: bool) -> None:
    return None


def _connects(cfg_dict: dict, seconds: float = 6.0) -> bool:
    """Whether a BridgeLink with this configuration gets an event acknowledged within ``seconds``."""
    acked: list[int] = []

    async def main() -> None:
        link = BridgeLink(from_dict(cfg_dict).mqtt, on_command=_nothing, on_acked=acked.append, backoff_max=0.5)
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


# -- access control: per-service users and the shipped rules, against real brokers and a real bridge ----------

FORGED = "FORGED-by-test"


@pytest.fixture(params=["mosquitto", "nats"])
def event_broker(request: pytest.FixtureRequest, tmp_path: Path):
    """A broker of each kind with the users and rules `touchmove broker-auth` writes for an event."""
    auth = tmp_path / "auth"
    if request.param == "mosquitto":
        broker = Broker(tmp_path)
        viewers = free_port()
        passwords = generate(auth, ["hall-a", "hall-b"], ["arbiters"], ["screens"], broker.port, viewers,
                             "127.0.0.1")
        broker.conf.write_text((auth / "mosquitto" / "touchmove.conf").read_text()
                               + f"user {getpass.getuser()}\npersistence false\n")
        broker.start()
        yield EventBroker(broker.port, viewers, passwords)
        broker.stop()
    else:
        passwords = generate(auth, ["hall-a", "hall-b"], ["arbiters"], ["screens"])
        require_binary("nats-server", "/usr/sbin/nats-server")
        cluster = NatsCluster(1, workdir=tmp_path / "nats", auth=(auth / "nats" / "auth.conf").read_text(),
                              probe_user=("screens", passwords["screens"]))
        cluster.start()
        yield EventBroker(cluster.nodes[0].mqtt_port, cluster.nodes[0].mqtt_port, passwords)
        cluster.stop()


@dataclass(frozen=True)
class EventBroker:
    """Where the services connect, where the viewers do (the same port on NATS), every user's password."""

    port: int
    viewer_port: int
    passwords: dict[str, str]


def test_a_viewer_with_a_bridges_client_id_cannot_push_the_bridge_off(tmp_path: Path) -> None:
    """Mosquitto from the generated configuration: a viewer connecting with a bridge's client id gets its user
    name as id on the viewers' listener (the bridge stays connected and keeps receiving), and a viewer's
    credentials are refused on the services' listener (issue 21). Before, one listener served both and the
    viewer's connection pushed the bridge off."""
    auth = tmp_path / "auth"
    broker = Broker(tmp_path)
    viewers = free_port()
    passwords = generate(auth, ["hall-a"], ["arbiters"], ["screens"], broker.port, viewers, "127.0.0.1")
    broker.conf.write_text((auth / "mosquitto" / "touchmove.conf").read_text()
                           + f"user {getpass.getuser()}\npersistence false\n")
    broker.start()
    try:
        asyncio.run(_take_the_bridges_id(broker.port, viewers, passwords))
    finally:
        broker.stop()


async def _take_the_bridges_id(port: int, viewer_port: int, passwords: dict[str, str]) -> None:
    probe = "touchmove-doctor/hall-a/probe"
    async with aiomqtt.Client("127.0.0.1", port, username="hall-a", password=passwords["hall-a"],
                              identifier="bridge-hall-a") as bridge:
        await bridge.subscribe(probe, qos=1)
        for where in (viewer_port, port):
            with contextlib.suppress(aiomqtt.MqttError):   # refused on the services' listener
                async with aiomqtt.Client("127.0.0.1", where, username="screens", password=passwords["screens"],
                                          identifier="bridge-hall-a") as viewer:
                    await viewer.subscribe("hall-a/#", qos=1)
                    await asyncio.sleep(0.5)
        # the bridge's connection is the one it had: a message to it arrives, no reconnection made
        await bridge.publish(probe, b"still here", qos=1)
        async with asyncio.timeout(5):
            async for message in bridge.messages:
                assert message.payload == b"still here"
                break
    with pytest.raises(aiomqtt.MqttError):
        async with aiomqtt.Client("127.0.0.1", port, username="screens", password=passwords["screens"]) as c:
            await c.subscribe("hall-a/#")


def test_generated_files(tmp_path: Path) -> None:
    passwords = generate(tmp_path, ["hall-a"], ["arbiters"], ["screens"])
    again = generate(tmp_path, ["hall-a", "hall-b"], ["arbiters"], ["screens"])
    assert all(again[u] == p for u, p in passwords.items()), "passwords kept when the command runs again"
    assert (tmp_path / "secrets" / "hall-a.password").stat().st_mode & 0o777 == 0o600
    acl = (tmp_path / "mosquitto" / "acl").read_text()
    viewers = (tmp_path / "mosquitto" / "viewers.acl").read_text()
    assert "user screens\ntopic readwrite touchmove-doctor/screens/#\ntopic read hall-a/#" in viewers
    assert "topic write hall-a/boards/+/set" in acl.split("user arbiters")[1]
    assert "screens" not in acl and "screens:" not in (tmp_path / "mosquitto" / "passwd").read_text()
    # the viewers' listener, and it alone, ties the client id to the user name
    conf = (tmp_path / "mosquitto" / "touchmove.conf").read_text()
    services, watchers = conf.split("listener 1884")
    assert "listener 1883" in services and "use_username_as_clientid" not in services
    assert "use_username_as_clientid true" in watchers and "viewers.passwd" in watchers
    with pytest.raises(AuthError, match="must differ"):
        generate(tmp_path, ["hall-a"], ["arbiters"], [], 1883, 1883)
    with pytest.raises(AuthError, match="topic level"):
        generate(tmp_path, ["hall/a"], ["arbiters"], [])


def test_a_bridge_reads_back_its_own_retained_pgn_and_no_other_halls(event_broker: EventBroker) -> None:
    """After a crash while its journal could not write, a bridge reads its boards' retained PGN back (the plies it
    had published) before it publishes anything on the connection: the rules `broker-auth` writes let it read its
    own hall's, not another hall's (Mosquitto and NATS)."""
    asyncio.run(_read_back(event_broker))


async def _read_back(broker: EventBroker) -> None:
    published = b'[Event "touchmove"]\n\n1. e4 e5 *\n'
    for hall in ("hall-a", "hall-b"):
        async with aiomqtt.Client("127.0.0.1", broker.port, username=hall, password=broker.passwords[hall]) as c:
            await c.publish(f"{hall}/boards/b1/pgn", published, qos=1, retain=True)

    async def read(hall: str, wanted: set[str], then: bytes | None = None) -> list[dict[str, bytes]]:
        found: list[dict[str, bytes]] = []
        link = BridgeLink(from_dict({"mqtt": {"url": f"mqtt://127.0.0.1:{broker.port}", "base_topic": "hall-a",
                                            "username": "hall-a", "password": broker.passwords["hall-a"]}}).mqtt,
                        on_command=_nothing, backoff_max=0.5)
        link.read_back(f"{hall}/boards/+/pgn", wanted, found.append)
        if then is not None:
            link.retain(f"{hall}/boards/b1/pgn", then)      # the restarted bridge's own: published after the read
        task = asyncio.create_task(link.run())
        try:
            async with asyncio.timeout(15):
                while not found or link.pending():
                    await asyncio.sleep(0.05)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return found

    # b2 has no retained PGN: the read waits READ_BACK_S for it, then gives what it found
    assert await read("hall-a", {"hall-a/boards/b1/pgn", "hall-a/boards/b2/pgn"}, b"rebuilt") == [
        {"hall-a/boards/b1/pgn": published}]
    assert await read("hall-a", {"hall-a/boards/b1/pgn"}) == [{"hall-a/boards/b1/pgn": b"rebuilt"}]
    assert await read("hall-b", {"hall-b/boards/b1/pgn"}) == [{}]        # another hall's: not for this bridge


def test_anonymous_and_viewers_cannot_command_or_forge(event_broker: EventBroker, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    port, passwords = event_broker.port, event_broker.passwords
    moves = game_moves(OPERA)[:6]
    timeline = write_timeline(tmp_path / "t.jsonl", simple_timeline(moves, think=300, hand=100))
    board = PtyBoard([sys.executable, str(FAKE), str(timeline), "b1", "--speed", "3"], str(tmp_path / "board1"))
    board.plug()
    journal = tmp_path / "j.sqlite3"
    cfg = tmp_path / "bridge.toml"
    cfg.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{port}"\nbase_topic = "hall-a"\nusername = "hall-a"\n'
                   f'password_file = "{tmp_path / "auth" / "secrets" / "hall-a.password"}"\n\n'
                   f'[serial]\nports = ["{tmp_path / "board*"}"]\nrescan_s = 0.3\n\n[journal]\npath = "{journal}"\n')
    monkeypatch.delenv("TOUCHMOVE_MQTT_PASSWORD", raising=False)
    daemon = start_daemon(cfg, tmp_path / "daemon.log")
    try:
        seen = asyncio.run(_attack(port, event_broker.viewer_port, passwords, board, len(moves)))
    finally:
        daemon.terminate()
        daemon.wait(10)
        board.stop()
    log = (tmp_path / "daemon.log").read_text(errors="replace")[-2000:]
    # the arbiters' service (positive control) is obeyed ...
    assert any(t == "hall-a/boards/b1/response" and b'"a-assign"' in p and b'"ok"' in p for t, p in seen), log
    assert any(t.endswith("/events") and b'"takeback"' in p and b'"ply":5' in p for t, p in seen), log
    # ... nobody else is: no reply to their commands, no takeback to ply 1, no forged message reached anyone
    assert not any(b'"v-' in p for t, p in seen if t.endswith("/response")), "a viewer's command was answered"
    assert not any(b'"takeback"' in p and b'"ply":1,' in p for t, p in seen), "a viewer's takeback was carried out"
    assert not any(FORGED.encode() in p for _, p in seen), [t for t, p in seen if FORGED.encode() in p]
    last_state = [p for t, p in seen if t == "hall-a/bridge/state"][-1]
    assert last_state == b'{"state":"online"}'
    with sqlite3.connect(journal) as db:
        kinds = [json.loads(p)["type"] for (p,) in db.execute("SELECT payload FROM events")]
        operator = [body for (body,) in db.execute("SELECT body FROM entries WHERE source = 'operator'")]
    assert kinds.count("takeback") == 1 and "game_end" not in kinds
    assert len(operator) == 2 and not any("K6k" in b or "setup" in b for b in operator), operator


async def _attack(port: int, viewer_port: int, passwords: dict[str, str], board: PtyBoard,
                  plies: int) -> list[tuple[str, bytes]]:
    """Play, then try every forgery as anonymous, viewer and another hall's bridge; return what arbiters saw."""
    seen: list[tuple[str, bytes]] = []

    def client(user: str | None, name: str) -> aiomqtt.Client:
        return aiomqtt.Client("127.0.0.1", viewer_port if user == "screens" else port, username=user,
                              password=passwords.get(user or ""), identifier=f"{name}-{time.time_ns()}")

    async with client("arbiters", "arbiters") as arb:
        await arb.subscribe("hall-a/#", qos=1)

        async def collect() -> None:
            async for m in arb.messages:
                seen.append((str(m.topic), bytes(m.payload) if isinstance(m.payload, bytes) else b""))
        task = asyncio.create_task(collect())
        deadline = time.monotonic() + 30
        while not any(t == "hall-a/bridge/state" and p == b'{"state":"online"}' for t, p in seen):
            assert time.monotonic() < deadline, "the bridge did not come online with its password file"
            await asyncio.sleep(0.1)
        board.start()
        while sum(1 for t, p in seen if t.endswith("/events") and b'"type":"move"' in p) < plies:
            assert time.monotonic() < deadline + 30, f"moves did not arrive: {seen[-5:]}"
            await asyncio.sleep(0.1)
        with pytest.raises(aiomqtt.MqttError):       # anonymous clients are refused
            async with client(None, "anonymous") as anon:
                await anon.publish("hall-a/boards/b1/set", b'{"command":"takeback","ply":1}', qos=1)
        forged_event = json.dumps({"type": "game_end", "game": 1, "result": "0-1", "reason": FORGED, "board": "b1",
                                   "seq": 10_000, "session": "x", "ts": "2026-01-01T00:00:00.000Z"})
        attempts = [
            ("hall-a/boards/b1/set", '{"command":"takeback","ply":1,"transaction":"v-takeback"}', False),
            ("hall-a/boards/b1/set", '{"command":"setup","fen":"8/8/8/8/8/8/8/K6k w - - 0 1",'
                                     '"transaction":"v-setup"}', False),
            ("hall-a/boards/b1/set", '{"command":"new_game","transaction":"v-new"}', False),
            ("hall-a/bridge/request/leds", '{"board":"b1","clear":true,"transaction":"v-leds"}', False),
            ("hall-a/boards/b1/events", forged_event, False),
            ("hall-a/boards/b1/state", json.dumps({"board": "b1", "fen": FORGED}), True),
            ("hall-a/boards/b1/pgn", f'[Result "0-1"]\n{{{FORGED}}} 0-1', True),
            ("hall-a/bridge/state", f'{{"state":"offline","note":"{FORGED}"}}', True),
        ]
        for user in ("screens", "hall-b"):
            try:
                async with client(user, user) as c:
                    if user == "screens":    # a viewer reads: the retained state is there
                        await c.subscribe("hall-a/boards/+/state", qos=1)
                        async with asyncio.timeout(10):
                            async for m in c.messages:
                                assert b'"board":"b1"' in bytes(m.payload)  # type: ignore[arg-type]
                                break
                    for topic, payload, retain in attempts:
                        await c.publish(topic, payload.replace("v-", f"v-{user}-").encode(), qos=1, retain=retain)
            except aiomqtt.MqttError:
                pass     # a broker may also drop the connection of a client breaking its rules
        await arb.publish("hall-a/boards/b1/set", b'{"command":"assign","white":"A","transaction":"a-assign"}', qos=1)
        await arb.publish("hall-a/boards/b1/set", b'{"command":"takeback","ply":5,"transaction":"a-takeback"}', qos=1)
        while not any(b'"a-takeback"' in p for _, p in seen):
            assert time.monotonic() < deadline + 60, "the arbiters' takeback was not answered"
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)
        task.cancel()
    # a fresh reader sees the retained topics as the bridge left them
    async with client("screens", "screens-late") as late:
        await late.subscribe("hall-a/#", qos=1)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(3):
                async for m in late.messages:
                    seen.append((str(m.topic), bytes(m.payload) if isinstance(m.payload, bytes) else b""))
    return seen


def _sign(openssl: str, tmp: Path, name: str, cn: str, san: str | None = None) -> tuple[Path, Path]:
    key, csr, crt = tmp / f"{name}.key", tmp / f"{name}.csr", tmp / f"{name}.pem"
    subprocess.run([openssl, "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={cn}", "-keyout", str(key),
                    "-out", str(csr)], check=True, capture_output=True)
    ext = tmp / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    subprocess.run([openssl, "x509", "-req", "-in", str(csr), "-CA", str(tmp / "ca.pem"), "-CAkey", str(tmp / "ca.key"),
                    "-CAcreateserial", "-days", "1", "-extfile", str(ext), "-out", str(crt)],
                   check=True, capture_output=True)
    return crt, key


def test_tls_client_certificate(tmp_path: Path) -> None:
    openssl = require_binary("openssl", "/usr/bin/openssl")
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
                    "-keyout", str(tmp_path / "ca.key"), "-out", str(tmp_path / "ca.pem")],
                   check=True, capture_output=True)
    server_crt, server_key = _sign(openssl, tmp_path, "server", "127.0.0.1", "IP:127.0.0.1")
    client_crt, client_key = _sign(openssl, tmp_path, "client", "hall-a")
    broker = Broker(tmp_path)
    broker.conf.write_text(
        f"user {getpass.getuser()}\nlistener {broker.port} 127.0.0.1\nallow_anonymous false\n"
        f"cafile {tmp_path / 'ca.pem'}\ncertfile {server_crt}\nkeyfile {server_key}\n"
        "require_certificate true\nuse_identity_as_username true\n")
    broker.start()
    try:
        url = f"mqtts://127.0.0.1:{broker.port}"
        ca = str(tmp_path / "ca.pem")
        assert _connects({"mqtt": {"url": url, "ca_file": ca, "cert_file": str(client_crt),
                                   "key_file": str(client_key)}})
        assert not _connects({"mqtt": {"url": url, "ca_file": ca}}, seconds=3)   # no client certificate
    finally:
        broker.stop()
