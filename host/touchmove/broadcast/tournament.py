"""The tournament model: a TOML file with the event, the rounds' pairings and their results.

Example (the README has a longer one)::

    event = "Touchmove Open 2026"
    site = "Lisbon POR"
    time_control = "180+2"       # PGN TimeControl: seconds + increment
    round = 3                    # the round being broadcast

    [broadcast]
    output_dir = "broadcast"     # round-3.pgn is written here
    host = "127.0.0.1"
    port = 8080
    # token = "..."              # arbiter token; else env TOUCHMOVE_ARBITER_TOKEN
    # lichess_round = "abcd1234" # push to a lichess broadcast round; token from env LICHESS_TOKEN
    # assign = true              # send the pairings to the bridges (their own PGNs get the names)

    [[brokers]]
    url = "mqtt://127.0.0.1:1883"
    bases = ["touchmove"]

    [[rounds]]
    number = 3
    date = 2026-11-29

    [[rounds.boards]]
    board = 1
    board_id = "hall-a-01"      # the board id the bridge publishes under
    white = { name = "Carlsen, Magnus", fide_id = 1503014, title = "GM", elo = 2830 }
    black = { name = "Doe, Jane", elo = 2101 }
    # result = "1-0"            # a result the arbiter enters by hand (wins over the board's)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from touchmove.broadcast.results import normalize_result
from touchmove.brokers import PASSWORD_ENV, BrokerSettingError, Endpoint, parse_urls, read_secret

TOKEN_ENV = "TOUCHMOVE_ARBITER_TOKEN"
LICHESS_TOKEN_ENV = "LICHESS_TOKEN"


class TournamentError(ValueError):
    """The tournament file is missing something or has a wrong value."""


@dataclass(frozen=True, slots=True)
class Player:
    name: str
    fide_id: int | None = None
    title: str | None = None
    elo: int | None = None


@dataclass(frozen=True, slots=True)
class Pairing:
    """One board of a round: the physical board (its bridge id) and who plays on it."""

    board: int
    board_id: str
    white: Player
    black: Player
    result: str | None = None


@dataclass(frozen=True, slots=True)
class Round:
    number: int
    date: dt.date | None
    pairings: tuple[Pairing, ...]

    def by_board_id(self) -> dict[str, Pairing]:
        return {p.board_id: p for p in self.pairings}

    def pairing(self, board: int) -> Pairing:
        for p in self.pairings:
            if p.board == board:
                return p
        raise KeyError(board)


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """One MQTT broker and the bridges' base topics on it."""

    host: str = "127.0.0.1"
    port: int = 1883
    bases: tuple[str, ...] = ("touchmove",)
    username: str | None = None
    password: str | None = None
    tls: bool = False
    ca_file: str | None = None
    share_group: str | None = None
    #: more nodes of the same (clustered) broker, tried in turn after ``host:port``
    fallbacks: tuple[Endpoint, ...] = ()
    cert_file: str | None = None
    key_file: str | None = None
    #: QoS of the broadcaster's subscriptions: 0 on a NATS cluster (plain subscriptions that survive a node's
    #: death; a QoS 1 one is a JetStream consumer there), 1 elsewhere. Gaps are filled from the retained PGN.
    subscribe_qos: int = 1

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        return (Endpoint(self.host, self.port, self.tls), *self.fallbacks)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> BrokerConfig:
        """Build from ``mqtt://[user:pass@]host[:port]`` (``mqtts://`` turns TLS on)."""
        parts = urlsplit(url if "://" in url else f"mqtt://{url}")
        if parts.scheme not in ("mqtt", "mqtts", "tcp", "ssl"):
            raise TournamentError(f"broker url scheme must be mqtt or mqtts: {url!r}")
        tls = parts.scheme in ("mqtts", "ssl")
        return cls(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or (8883 if tls else 1883),
            username=parts.username,
            password=parts.password,
            tls=tls,
            **kwargs,
        )


@dataclass(frozen=True, slots=True)
class BroadcastSettings:
    output_dir: Path = Path("broadcast")
    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = None
    lichess_round: str | None = None
    lichess_url: str = "https://lichess.org"
    lichess_interval: float = 2.0
    #: Send each board's pairing to its bridge (``assign`` command) when the broadcaster connects.
    assign: bool = False


@dataclass(frozen=True, slots=True)
class Tournament:
    event: str
    site: str
    time_control: str
    round: int
    rounds: dict[int, Round]
    brokers: tuple[BrokerConfig, ...] = (BrokerConfig(),)
    settings: BroadcastSettings = field(default_factory=BroadcastSettings)

    def current_round(self) -> Round:
        return self.rounds[self.round]

    def round_date(self, number: int | None = None) -> dt.date:
        """The round's date from the file, else today's (UTC)."""
        rnd = self.rounds.get(self.round if number is None else number)
        if rnd is not None and rnd.date is not None:
            return rnd.date
        return dt.datetime.now(dt.UTC).date()


def _opt_int(value: Any, what: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TournamentError(f"{what} must be an integer")
    try:
        return int(value)
    except ValueError as exc:
        raise TournamentError(f"{what} must be an integer: {value!r}") from exc


def _player(raw: Any, what: str) -> Player:
    if isinstance(raw, str):
        return Player(raw)
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise TournamentError(f"{what} must be a name or a table with a name")
    title = raw.get("title")
    return Player(
        name=raw["name"],
        fide_id=_opt_int(raw.get("fide_id"), f"{what}.fide_id"),
        title=str(title) if title else None,
        elo=_opt_int(raw.get("elo"), f"{what}.elo"),
    )


def _date(value: Any, what: str) -> dt.date | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.replace(".", "-"))
        except ValueError as exc:
            raise TournamentError(f"{what}: not a date: {value!r}") from exc
    raise TournamentError(f"{what}: not a date: {value!r}")


def _round(raw: Any) -> Round:
    if not isinstance(raw, dict) or not isinstance(raw.get("number"), int):
        raise TournamentError("every [[rounds]] needs an integer number")
    number = raw["number"]
    pairings: list[Pairing] = []
    for i, b in enumerate(raw.get("boards", [])):
        what = f"round {number} board #{i + 1}"
        if not isinstance(b, dict):
            raise TournamentError(f"{what}: must be a table")
        board = _opt_int(b.get("board", i + 1), f"{what}.board")
        board_id = b.get("board_id")
        if not isinstance(board_id, str) or not board_id:
            raise TournamentError(f"{what}: board_id (the bridge's board id) is required")
        result = b.get("result")
        if result is not None:
            norm = normalize_result(str(result))
            if norm is None:
                raise TournamentError(f"{what}: unknown result {result!r}")
            result = None if norm == "*" else norm
        pairings.append(Pairing(
            board=board if board is not None else i + 1,
            board_id=board_id,
            white=_player(b.get("white"), f"{what}.white"),
            black=_player(b.get("black"), f"{what}.black"),
            result=result,
        ))
    numbers = [p.board for p in pairings]
    if len(set(numbers)) != len(numbers):
        raise TournamentError(f"round {number}: board numbers repeat")
    ids = [p.board_id for p in pairings]
    if len(set(ids)) != len(ids):
        raise TournamentError(f"round {number}: a board id is used twice")
    return Round(number, _date(raw.get("date"), f"round {number} date"),
                 tuple(sorted(pairings, key=lambda p: p.board)))


def _broker(raw: Any) -> BrokerConfig:
    if not isinstance(raw, dict):
        raise TournamentError("[[brokers]] entries must be tables")
    bases = raw.get("bases", raw.get("base", "touchmove"))
    if isinstance(bases, str):
        bases = [bases]
    if not isinstance(bases, list) or not all(isinstance(b, str) and b for b in bases):
        raise TournamentError("brokers.bases must be a list of base topics")
    extra: dict[str, Any] = {
        "bases": tuple(b.rstrip("/") for b in bases),
        "ca_file": raw.get("ca_file"),
        "share_group": raw.get("share_group") or None,
    }
    cfg = BrokerConfig.from_url(str(raw.get("url", "mqtt://127.0.0.1:1883")), **extra)
    if "username" in raw or "password" in raw:
        pw = raw.get("password")
        pw_env = raw.get("password_env")
        if pw is None and isinstance(pw_env, str):
            pw = os.environ.get(pw_env)
        cfg = BrokerConfig(cfg.host, cfg.port, cfg.bases, raw.get("username"), pw,
                           cfg.tls or bool(raw.get("tls")), cfg.ca_file, cfg.share_group)
    elif raw.get("tls"):
        cfg = BrokerConfig(cfg.host, cfg.port, cfg.bases, cfg.username, cfg.password, True,
                           cfg.ca_file, cfg.share_group)
    return _cluster_and_secrets(cfg, raw)


def _cluster_and_secrets(cfg: BrokerConfig, raw: dict[str, Any]) -> BrokerConfig:
    """Add ``urls`` (a cluster's other nodes), ``password_file``, the default password variable, client TLS."""
    try:
        urls = raw.get("urls", [])
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            raise TournamentError("brokers.urls must be a list of broker URLs")
        nodes = parse_urls([str(raw["url"]), *urls] if "url" in raw else urls) if urls else cfg.endpoints
        password = read_secret(cfg.password, file=raw.get("password_file"),
                               default_env=PASSWORD_ENV if cfg.username else None)
        context_tls = cfg.tls or bool(raw.get("cert_file"))
        first = nodes[0]
        qos = raw.get("subscribe_qos", 1)
        if qos not in (0, 1) or isinstance(qos, bool):
            raise TournamentError("brokers.subscribe_qos must be 0 or 1")
        return dataclasses.replace(
            cfg, host=first.host, port=first.port, password=password, tls=context_tls or first.tls,
            fallbacks=tuple(dataclasses.replace(n, tls=n.tls or context_tls) for n in nodes[1:]),
            cert_file=raw.get("cert_file"), key_file=raw.get("key_file"), subscribe_qos=qos)
    except BrokerSettingError as exc:
        raise TournamentError(f"[[brokers]] {exc}") from exc


def parse_tournament(data: dict[str, Any], *, base_dir: Path | None = None) -> Tournament:
    """Build the model from parsed TOML; relative paths are taken from ``base_dir``."""
    for key in ("event", "round"):
        if key not in data:
            raise TournamentError(f"missing top-level key {key!r}")
    rounds = {r.number: r for r in (_round(raw) for raw in data.get("rounds", []))}
    current = _opt_int(data["round"], "round")
    if current is None or current not in rounds:
        raise TournamentError(f"round {data['round']!r} has no [[rounds]] entry with its pairings")
    raw_b = data.get("broadcast", {})
    if not isinstance(raw_b, dict):
        raise TournamentError("[broadcast] must be a table")
    out = Path(str(raw_b.get("output_dir", "broadcast")))
    if not out.is_absolute() and base_dir is not None:
        out = base_dir / out
    token = raw_b.get("token") or os.environ.get(TOKEN_ENV) or None
    settings = BroadcastSettings(
        output_dir=out,
        host=str(raw_b.get("host", "127.0.0.1")),
        port=_opt_int(raw_b.get("port", 8080), "broadcast.port") or 0,
        token=str(token) if token else None,
        lichess_round=raw_b.get("lichess_round") or None,
        lichess_url=str(raw_b.get("lichess_url", "https://lichess.org")).rstrip("/"),
        lichess_interval=float(raw_b.get("lichess_interval", 2.0)),
        assign=bool(raw_b.get("assign", False)),
    )
    brokers = tuple(_broker(b) for b in data.get("brokers", [{}]))
    if not brokers:
        raise TournamentError("at least one [[brokers]] entry is needed")
    return Tournament(
        event=str(data["event"]),
        site=str(data.get("site", "?")),
        time_control=str(data.get("time_control", "?")),
        round=current,
        rounds=rounds,
        brokers=brokers,
        settings=settings,
    )


def load_tournament(path: str | os.PathLike[str]) -> Tournament:
    """Read and check a tournament TOML file."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise TournamentError(f"{p}: {exc}") from exc
    return parse_tournament(data, base_dir=p.parent)
