"""Broker connection settings shared by the bridge and the broadcaster: URL lists, secrets, TLS.

A service is given one broker URL or several (the nodes of a cluster). :class:`Endpoints` walks them in
order: the first that answers is used; when its connection drops, the next one is tried at once, and only
after a whole round without success does the caller back off. Secrets (passwords) come from the
configuration, an environment variable or a file (a systemd credential, a Kubernetes secret), never only
from the TOML; TLS may add a client certificate (mutual TLS).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: Environment variables read when the configuration names none.
PASSWORD_ENV = "TOUCHMOVE_MQTT_PASSWORD"
USERNAME_ENV = "TOUCHMOVE_MQTT_USERNAME"


class BrokerSettingError(ValueError):
    """A broker URL, secret or certificate setting is not usable."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One broker node: ``mqtt://host:port`` or ``mqtts://host:port``."""

    host: str
    port: int
    tls: bool = False

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ParsedUrl:
    endpoint: Endpoint
    username: str | None
    password: str | None


def parse_url(url: str) -> ParsedUrl:
    """Return the endpoint and any ``user:password@`` of ``mqtt[s]://[user:pass@]host[:port]``."""
    parts = urlsplit(url if "://" in url else f"mqtt://{url}")
    if parts.scheme not in ("mqtt", "mqtts", "tcp", "ssl"):
        raise BrokerSettingError(f"broker URL scheme must be mqtt:// or mqtts://, not {parts.scheme!r}")
    tls = parts.scheme in ("mqtts", "ssl")
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError as exc:
        raise BrokerSettingError(f"bad port in broker URL {url!r}") from exc
    return ParsedUrl(Endpoint(parts.hostname or "127.0.0.1", port, tls),
                     unquote(parts.username) if parts.username else None,
                     unquote(parts.password) if parts.password else None)


def parse_urls(urls: Iterable[str]) -> tuple[Endpoint, ...]:
    """Return the endpoints of a list of URLs (credentials in them are ignored: see :func:`parse_url`)."""
    out = tuple(parse_url(u).endpoint for u in urls)
    if not out:
        raise BrokerSettingError("at least one broker URL is needed")
    return out


def read_secret(value: str | None, *, env: str | None = None, file: str | None = None,
                default_env: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """Return a secret from (first found) ``value``, the file ``file``, the variable ``env``, ``default_env``.

    ``file`` may contain ``$VARIABLES`` (e.g. ``$CREDENTIALS_DIRECTORY/mqtt-password`` under systemd);
    trailing newlines of the file are dropped. An unreadable file or a named but unset variable is an error:
    a service must not silently connect without its credentials.
    """
    environ = os.environ if environ is None else environ
    if value is not None:
        return value
    if file is not None:
        path = Path(_expand(file, environ))
        try:
            return path.read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise BrokerSettingError(f"cannot read the secret file {path}: {exc.strerror}") from exc
    if env is not None:
        if env not in environ:
            raise BrokerSettingError(f"the environment variable {env} (a broker password) is not set")
        return environ[env]
    if default_env is not None and environ.get(default_env):
        return environ[default_env]
    return None


def _expand(path: str, environ: Mapping[str, str]) -> str:
    missing = [name for name in ("CREDENTIALS_DIRECTORY", "STATE_DIRECTORY") if f"${name}" in path
               and name not in environ]
    if missing:
        raise BrokerSettingError(f"{path}: ${missing[0]} is not set (is the service started by systemd?)")
    out = path
    for name, value in environ.items():
        out = out.replace(f"${{{name}}}", value).replace(f"${name}", value)
    return out


def tls_context(ca_file: str | None, cert_file: str | None = None, key_file: str | None = None) -> ssl.SSLContext:
    """A client TLS context verifying the broker (``ca_file`` or the system CAs), with a client certificate."""
    try:
        context = ssl.create_default_context(cafile=ca_file)
        if cert_file:
            context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as exc:
        raise BrokerSettingError(f"TLS files: {exc}") from exc
    return context


def refused_subscription(granted: Sequence[object]) -> bool:
    """Whether a SUBACK refused a filter (code 0x80 or above: e.g. a NATS node that could not create the
    subscription's JetStream consumer during a leader election). Subscribe again rather than wait in vain."""
    return any(int(getattr(code, "value", code)) >= 0x80 for code in granted)  # type: ignore[call-overload]


class Endpoints:
    """Round-robin over a service's broker nodes, starting at ``start`` (spread services over nodes)."""

    def __init__(self, endpoints: Iterable[Endpoint], start: int = 0) -> None:
        self.all = tuple(endpoints)
        if not self.all:
            raise BrokerSettingError("at least one broker URL is needed")
        self._index = start % len(self.all)
        self._failed_in_row = 0
        #: whole rounds of the nodes that failed since the last connection
        self.rounds_failed = 0

    @property
    def current(self) -> Endpoint:
        return self.all[self._index]

    def failed(self) -> bool:
        """Move to the next node; return True when a whole round failed (time to back off)."""
        self._index = (self._index + 1) % len(self.all)
        self._failed_in_row += 1
        if self._failed_in_row >= len(self.all):
            self._failed_in_row = 0
            self.rounds_failed += 1
            return True
        return False

    def connected(self) -> None:
        self._failed_in_row = 0
        self.rounds_failed = 0
