"""The bridge's configuration: a TOML file read with :mod:`tomllib`.

Example (every key is optional; these are the defaults unless noted)::

    [mqtt]
    url = "mqtt://127.0.0.1:1883"      # mqtts:// for TLS
    # urls = ["mqtt://n1:1883", "mqtt://n2:1883"]   # instead of url: a cluster's nodes, tried in turn
    base_topic = "touchmove"
    username = "bridge"                # no default
    password = "secret"                # no default; better password_file or password_env (or the
    # password_file = "$CREDENTIALS_DIRECTORY/mqtt-password"   #  env TOUCHMOVE_MQTT_PASSWORD)
    ca_file = "/etc/touchmove/ca.pem"  # no default; implies TLS
    # cert_file = "/etc/touchmove/bridge.crt"  # a TLS client certificate (with key_file)
    keepalive = 15                     # seconds; a silent broker is given up after 1.5x this
    protocol = 4                       # 4 = MQTT 3.1.1, 5 = MQTT 5
    queue_size = 10000                 # events queued in memory (the rest wait in the journal)
    events_qos = 1                     # 0 on a NATS cluster: events on connections of their own, never waiting
                                       # for JetStream (docs/changelog.md "Events at QoS 0")

    [serial]
    ports = ["/dev/touchmove/*"]       # paths or glob patterns (the names deploy/udev/99-touchmove.rules gives)
    usb = [{ vid = 0x2E8A, pid = 0x0005 }, { vid = 0x303A, pid = 0x4001 }]  # and/or USB ids: Pico, ESP32-S3
    baudrate = 115200
    rescan_s = 1.5
    # boards that speak a vendor's protocol (docs/boards.md): a port (path or glob) or USB ids, and the protocol
    # boards = [{ port = "/dev/touchmove/dgt-*", protocol = "dgt" },
    #           { vid = 0x2D80, protocol = "chessnut" }]      # dgt | chesslink | chessnut

    [engine]
    settle_ms = 200

    [boards.e6614103e7]                # per board (id as in its hello): the USB serial number of its port;
    usb_serial = "E6614103E7123456"    #  another one there is a board_serial_changed alert (no default)

    [journal]
    path = "touchmove-journal.sqlite3"
    checkpoint_key = "/var/lib/touchmove/checkpoint.key"   # default: $TOUCHMOVE_CHECKPOINT_KEY, else
                                       # ~/.local/state/touchmove/checkpoint.key (created on first use)

    [livechess]                        # present: `touchmove run` also serves the LiveChess-compatible API
    host = "127.0.0.1"                 #  (docs/livechess.md); `touchmove livechess --config` reads it too
    port = 1982
    boards = ["e6614103e7"]            # list only these boards, in this order (default: every board, by id)
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from touchmove import board_ids
from touchmove.board_protocols import PROTOCOL_NAMES
from touchmove.mqtt.brokers import PASSWORD_ENV, USERNAME_ENV, BrokerSettingError, Endpoint, parse_url, read_secret

DEFAULT_BASE_TOPIC = "touchmove"


class ConfigError(ValueError):
    """The configuration file is not valid."""


@dataclass(frozen=True)
class UsbMatch:
    """Ports whose USB ids match (None matches anything)."""

    vid: int | None = None
    pid: int | None = None
    serial_number: str | None = None


@dataclass(frozen=True)
class BoardPort:
    """Ports served with a vendor's board protocol: a path or glob ``port``, or USB ids (None matches anything);
    ``rate`` is for simulations only (device ms per host ms, as a simulated board's hello says)."""

    protocol: str
    port: str | None = None
    vid: int | None = None
    pid: int | None = None
    rate: float = 1.0


@dataclass(frozen=True)
class MqttConfig:
    host: str = "127.0.0.1"
    port: int = 1883
    tls: bool = False
    username: str | None = None
    password: str | None = None
    ca_file: str | None = None
    base_topic: str = DEFAULT_BASE_TOPIC
    protocol: int = 4
    queue_size: int = 10_000
    client_id: str | None = None
    #: more broker nodes (a cluster), tried in turn after ``host:port``
    fallbacks: tuple[Endpoint, ...] = ()
    cert_file: str | None = None
    key_file: str | None = None
    keepalive: int = 15
    #: QoS of the events: 1 (acknowledged by the broker), or 0 on connections of their own to two nodes at once,
    #: re-sent from the last seconds when the node taking them goes (:mod:`touchmove.bridge.event_paths`)
    events_qos: int = 1

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        """Every broker node, the first one first."""
        return (Endpoint(self.host, self.port, self.tls), *self.fallbacks)


@dataclass(frozen=True)
class SerialConfig:
    ports: tuple[str, ...] = ()
    usb: tuple[UsbMatch, ...] = ()
    baudrate: int = 115200
    rescan_s: float = 1.5
    boards: tuple[BoardPort, ...] = ()


@dataclass(frozen=True)
class LiveChessConfig:
    """The LiveChess-compatible server (``[livechess]``): where it listens, which boards it lists."""

    host: str = "127.0.0.1"
    port: int = 1982
    boards: tuple[str, ...] = ()


@dataclass(frozen=True)
class BridgeConfig:
    mqtt: MqttConfig = field(default_factory=MqttConfig)
    serial: SerialConfig = field(default_factory=SerialConfig)
    settle_ms: int = 200
    journal: str = "touchmove-journal.sqlite3"
    #: the file with the key that signs engine checkpoints (None: touchmove.bridge.checkpoint.key_path's default)
    checkpoint_key: str | None = None
    #: board id -> the USB serial number its port must have (``[boards.<id>] usb_serial``)
    board_serials: dict[str, str] = field(default_factory=dict)
    #: the ``[livechess]`` section (None: absent, ``touchmove run`` serves no LiveChess API)
    livechess: LiveChessConfig | None = None


def parse_broker_url(url: str) -> dict[str, Any]:
    """Return host, port, tls, username and password from ``mqtt://[user:pass@]host[:port]`` (or mqtts)."""
    try:
        parsed = parse_url(url)
    except BrokerSettingError as exc:
        raise ConfigError(str(exc)) from exc
    ep = parsed.endpoint
    out: dict[str, Any] = {"host": ep.host, "port": ep.port, "tls": ep.tls}
    if parsed.username:
        out["username"] = parsed.username
    if parsed.password:
        out["password"] = parsed.password
    return out


def _mqtt_kwargs(mqtt_t: dict[str, Any]) -> dict[str, Any]:
    """The :class:`MqttConfig` arguments of an ``[mqtt]`` table (URL list and secrets resolved)."""
    _check(mqtt_t, "mqtt", {"url": str, "urls": list, "base_topic": str, "username": str, "password": str,
                            "password_env": str, "password_file": str, "ca_file": str, "cert_file": str,
                            "key_file": str, "keepalive": int, "protocol": int, "queue_size": int,
                            "client_id": str, "events_qos": int})
    if "url" in mqtt_t and "urls" in mqtt_t:
        raise ConfigError("[mqtt] give url or urls, not both")
    urls = mqtt_t.get("urls", [mqtt_t.get("url", "mqtt://127.0.0.1:1883")])
    if not urls or not all(isinstance(u, str) for u in urls):
        raise ConfigError("[mqtt] urls must be a non-empty list of broker URLs")
    kw: dict[str, Any] = parse_broker_url(urls[0])
    fallbacks = [parse_broker_url(u) for u in urls[1:]]
    kw["fallbacks"] = tuple(Endpoint(f["host"], f["port"], f["tls"]) for f in fallbacks)
    for key in ("username", "password", "ca_file", "cert_file", "key_file", "keepalive", "base_topic",
                "protocol", "queue_size", "client_id", "events_qos"):
        if key in mqtt_t:
            kw[key] = mqtt_t[key]
    if sum(k in mqtt_t for k in ("password", "password_env", "password_file")) > 1:
        raise ConfigError("[mqtt] give one of password, password_env, password_file")
    try:
        kw["password"] = read_secret(kw.get("password"), env=mqtt_t.get("password_env"),
                                     file=mqtt_t.get("password_file"), default_env=PASSWORD_ENV)
    except BrokerSettingError as exc:
        raise ConfigError(f"[mqtt] {exc}") from exc
    if kw.get("username") is None and os.environ.get(USERNAME_ENV):
        kw["username"] = os.environ[USERNAME_ENV]
    if kw.get("key_file") and not kw.get("cert_file"):
        raise ConfigError("[mqtt] key_file needs cert_file (the client certificate)")
    if kw.get("ca_file") or kw.get("cert_file"):
        kw["tls"] = True
    if kw["tls"]:
        kw["fallbacks"] = tuple(Endpoint(f.host, f.port, True) for f in kw["fallbacks"])
    if not 2 <= kw.get("keepalive", 15) <= 600:
        raise ConfigError("[mqtt] keepalive must be between 2 and 600 seconds")
    if kw.get("events_qos", 1) not in (0, 1):
        raise ConfigError("[mqtt] events_qos must be 0 or 1")
    return kw


def _check(table: dict[str, Any], name: str, allowed: dict[str, type | tuple[type, ...]]) -> None:
    for key, value in table.items():
        if key not in allowed:
            raise ConfigError(f"[{name}] unknown key {key!r}")
        expected = allowed[key]
        if isinstance(value, bool) and expected in (int, float, (int, float)):
            raise ConfigError(f"[{name}] {key} must be a number")
        if not isinstance(value, expected):
            raise ConfigError(f"[{name}] {key} has the wrong type ({type(value).__name__})")


def from_dict(data: dict[str, Any]) -> BridgeConfig:
    """Return the configuration for a parsed TOML document, or raise :class:`ConfigError`."""
    unknown = set(data) - {"mqtt", "serial", "engine", "journal", "boards", "livechess"}
    if unknown:
        raise ConfigError(f"unknown section(s): {', '.join(sorted(unknown))}")
    mqtt_kw = _mqtt_kwargs(data.get("mqtt", {}))
    if mqtt_kw.get("protocol", 4) not in (4, 5):
        raise ConfigError("[mqtt] protocol must be 4 (MQTT 3.1.1) or 5")
    base = mqtt_kw.get("base_topic", DEFAULT_BASE_TOPIC)
    if not base or any(c in base for c in "#+") or base.startswith("/") or base.endswith("/"):
        raise ConfigError("[mqtt] base_topic must be a topic prefix without wildcards or outer slashes")
    if mqtt_kw.get("queue_size", 1) < 1:
        raise ConfigError("[mqtt] queue_size must be >= 1")

    serial_t = data.get("serial", {})
    _check(serial_t, "serial", {"ports": list, "usb": list, "baudrate": int, "rescan_s": (int, float),
                                "boards": list})
    ports = serial_t.get("ports", [])
    if not all(isinstance(p, str) for p in ports):
        raise ConfigError("[serial] ports must be a list of paths or glob patterns")
    usb: list[UsbMatch] = []
    for entry in serial_t.get("usb", []):
        if not isinstance(entry, dict):
            raise ConfigError("[serial] usb entries must be tables like { vid = 0x2E8A, pid = 0x0005 }")
        _check(entry, "serial.usb", {"vid": int, "pid": int, "serial_number": str})
        usb.append(UsbMatch(entry.get("vid"), entry.get("pid"), entry.get("serial_number")))
    rescan = float(serial_t.get("rescan_s", 1.5))
    if not 0.05 <= rescan <= 60:
        raise ConfigError("[serial] rescan_s must be between 0.05 and 60 seconds")
    serial_cfg = SerialConfig(tuple(ports), tuple(usb), serial_t.get("baudrate", 115200), rescan,
                              _board_ports(serial_t.get("boards", [])))

    engine_t = data.get("engine", {})
    _check(engine_t, "engine", {"settle_ms": int})
    settle = engine_t.get("settle_ms", 200)
    if not 0 <= settle <= 5000:
        raise ConfigError("[engine] settle_ms must be between 0 and 5000")
    journal_t = data.get("journal", {})
    _check(journal_t, "journal", {"path": str, "checkpoint_key": str})
    key = journal_t.get("checkpoint_key")
    if key is not None and not key.strip():
        raise ConfigError("[journal] checkpoint_key must be a file path")
    return BridgeConfig(MqttConfig(**mqtt_kw), serial_cfg, settle,
                        journal_t.get("path", "touchmove-journal.sqlite3"), key,
                        _board_serials(data.get("boards", {})), _livechess(data.get("livechess")))


def _livechess(table: Any) -> LiveChessConfig | None:
    """Return the ``[livechess]`` settings (None without the section), or raise :class:`ConfigError`."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError("[livechess] must be a table")
    _check(table, "livechess", {"host": str, "port": int, "boards": list})
    port = table.get("port", 1982)
    if not 0 <= port <= 65535:
        raise ConfigError("[livechess] port must be between 0 and 65535")
    boards = table.get("boards", [])
    for board in boards:
        problem = board_ids.id_problem(board) if isinstance(board, str) else "not a string"
        if problem is not None:
            raise ConfigError(f"[livechess] boards: {board_ids.shown(str(board))}: {problem}")
    return LiveChessConfig(table.get("host", "127.0.0.1"), port, tuple(boards))


def _board_serials(boards_t: Any) -> dict[str, str]:
    """Return board id -> USB serial number from the ``[boards.<id>]`` tables."""
    if not isinstance(boards_t, dict):
        raise ConfigError("[boards] must hold one table per board id, like [boards.e6614103e7]")
    out: dict[str, str] = {}
    for board, table in boards_t.items():
        problem = board_ids.id_problem(board)
        if problem is not None:
            raise ConfigError(f"[boards] {board_ids.shown(board)}: {problem}")
        if not isinstance(table, dict):
            raise ConfigError(f"[boards.{board}] must be a table")
        _check(table, f"boards.{board}", {"usb_serial": str})
        if "usb_serial" in table:
            serial = table["usb_serial"]
            if not serial or len(serial) > 128 or not serial.isprintable():
                raise ConfigError(f"[boards.{board}] usb_serial must be the port's USB serial number")
            out[board] = serial
    return out


def _board_ports(entries: list[Any]) -> tuple[BoardPort, ...]:
    """Return the ``[serial] boards`` entries, or raise :class:`ConfigError`."""
    out = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ConfigError('[serial] boards entries must be tables like { port = "/dev/ttyUSB0", protocol = "dgt" }')
        _check(entry, "serial.boards", {"protocol": str, "port": str, "vid": int, "pid": int, "rate": (int, float)})
        if entry.get("protocol") not in PROTOCOL_NAMES:
            raise ConfigError(f"[serial.boards] protocol must be one of {', '.join(PROTOCOL_NAMES)}")
        if ("port" in entry) == ("vid" in entry or "pid" in entry):
            raise ConfigError("[serial.boards] give a port, or USB ids (vid, pid), for each entry")
        if not 1 <= entry.get("rate", 1) <= 1000:
            raise ConfigError("[serial.boards] rate (simulations only) must be between 1 and 1000")
        out.append(BoardPort(entry["protocol"], entry.get("port"), entry.get("vid"), entry.get("pid"),
                             float(entry.get("rate", 1))))
    return tuple(out)


def load(path: str | Path) -> BridgeConfig:
    """Read a TOML configuration file."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    return from_dict(data)
