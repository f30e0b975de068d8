"""The tournament model: a TOML file with the event, the rounds' pairings and their results.

Every key is checked (an unknown one is refused, naming the nearest known key); every error is one line.
Example (docs/broadcast.md has every key)::

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
    # delay_minutes = 15         # every public output 15 minutes behind (also per round)
    # private_console = true     # the live console needs a token to view (default: while a delay is set)

    [[brokers]]
    url = "mqtt://127.0.0.1:1883"
    bases = ["touchmove"]

    [[rounds]]
    number = 3
    date = 2026-11-29
    # start = 2026-11-29T15:00:00+01:00   # switch to this round by itself then
    # lichess = [{ boards = "1-64", round_id = "abcd1234" }, { boards = "65-128", round_id = "efgh5678" }]

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
import difflib
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from touchmove.broadcast.results import FORFEIT_SPELLINGS, normalize_result
from touchmove.mqtt.brokers import PASSWORD_ENV, BrokerSettingError, Endpoint, parse_urls, read_secret

TOKEN_ENV = "TOUCHMOVE_ARBITER_TOKEN"
LICHESS_TOKEN_ENV = "LICHESS_TOKEN"
#: Games a lichess broadcast round takes by push: 100 (the 256 lichess allows is for rounds it reads from a
#: URL itself, not for pushed ones). Checked at start-up and whenever the arbiter allows a further game.
LICHESS_MAX_GAMES = 100
LICHESS_MAX_GAMES_LIMIT = 100
MAX_BOARD = 10_000
MAX_DELAY_MINUTES = 24 * 60

#: The keys each table may hold (anything else is refused, with the nearest known key suggested).
TOP_KEYS = frozenset({"event", "site", "time_control", "round", "broadcast", "brokers", "rounds", "report"})
#: What a rating report (the TRF export) needs beyond the pairings and results.
REPORT_KEYS = frozenset({"federation", "chief_arbiter", "deputy_arbiters", "type", "rounds", "allotted_time"})
BROADCAST_KEYS = frozenset({"output_dir", "host", "port", "token", "lichess_round", "lichess_url",
                            "lichess_interval", "lichess_max_games", "lichess_token_file", "assign",
                            "delay_minutes", "private_console"})
#: (``urls``, ``password_file``, ``cert_file``, ``key_file``: the cluster work's broker lists and secrets)
BROKER_KEYS = {"url", "bases", "base", "username", "password", "password_env", "tls", "ca_file", "share_group",
               "urls", "password_file", "cert_file", "key_file", "subscribe_qos",
               "events_standby"}
ROUND_KEYS = frozenset({"number", "date", "start", "delay_minutes", "boards", "lichess_round", "lichess", "byes"})
BYE_KEYS = frozenset({"player", "type"})
#: TRF bye codes: half-point, full-point, pairing-allocated, zero-point.
BYE_TYPES = ("H", "F", "U", "Z")
BOARD_KEYS = frozenset({"board", "board_id", "white", "black", "result"})
PLAYER_KEYS = frozenset({"name", "fide_id", "title", "elo", "federation", "sex", "birth"})
LICHESS_KEYS = frozenset({"boards", "round_id"})


class TournamentError(ValueError):
    """The tournament file is missing something or has a wrong value; ``board`` (a round's number and a board
    id) says which board entry, so that :func:`load_tournament` can name its line."""

    def __init__(self, message: str, board: tuple[int, str] | None = None) -> None:
        super().__init__(message)
        self.board = board


#: FIDE's player titles (the TRF's title column), and TRF-16's letters for them.
TITLES = ("GM", "IM", "FM", "CM", "WGM", "WIM", "WFM", "WCM")


def check_keys(table: dict[str, Any], known: Iterable[str], where: str) -> None:
    """Refuse a key not in ``known``, naming the nearest known one (a typo must not lose a value)."""
    known = sorted(known)
    for key in table:
        if key not in known:
            near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f" (did you mean {near[0]!r}?)" if near else f" (known: {', '.join(known)})"
            raise TournamentError(f"{where}: unknown key {key!r}{hint}")


@dataclass(frozen=True, slots=True)
class Player:
    name: str
    fide_id: int | None = None
    title: str | None = None
    elo: int | None = None
    federation: str | None = None
    #: ``m`` or ``w`` (the TRF's sex column), and the birth date as the TRF writes it (YYYY/MM/DD).
    sex: str | None = None
    birth: str | None = None


@dataclass(frozen=True, slots=True)
class Pairing:
    """One board of a round: the physical board (its bridge id) and who plays on it."""

    board: int
    board_id: str
    white: Player
    black: Player
    result: str | None = None
    #: The result was given without the game being played (``1-0f``, ``+/-``): TRF ``+``/``-``.
    forfeit: bool = False


@dataclass(frozen=True, slots=True)
class Report:
    """The tournament records of a rating report (the TRF export's header)."""

    federation: str = ""
    chief_arbiter: str = ""
    deputy_arbiters: tuple[str, ...] = ()
    type: str = ""
    #: Rounds the tournament has (None: not known; the TRF-2026 export then leaves record 142 out).
    rounds: int | None = None
    #: The allotted time as the TRF's record 122 says it (free text); else the PGN TimeControl is written.
    allotted_time: str = ""


@dataclass(frozen=True, slots=True)
class LichessTarget:
    """A lichess broadcast round that shows the boards ``boards`` of a round."""

    round_id: str
    boards: range


@dataclass(frozen=True, slots=True)
class Round:
    number: int
    date: dt.date | None
    pairings: tuple[Pairing, ...]
    #: When the broadcaster switches to this round by itself (None: by the arbiter only).
    start: dt.datetime | None = None
    delay_minutes: float | None = None
    lichess: tuple[LichessTarget, ...] = ()
    #: Players not paired in the round and the bye they got (TRF ``H``, ``F``, ``U``, ``Z``).
    byes: tuple[tuple[Player, str], ...] = ()

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
    #: a second connection, to another node of the cluster, subscribed to the events only: a node's death loses
    #: no event on the way to the broadcaster (each comes twice, the second dropped by ``seq``)
    events_standby: bool = False

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
    #: The lichess round(s) of the file's ``round`` (several: its boards spread over them in board order).
    lichess_round: tuple[str, ...] | None = None
    lichess_url: str = "https://lichess.org"
    lichess_interval: float = 2.0
    lichess_max_games: int = LICHESS_MAX_GAMES
    #: A file holding the lichess token (re-read after lichess refused the token: replace it to resume).
    lichess_token_file: Path | None = None
    delay_minutes: float = 0.0
    #: Send each board's pairing to its bridge (``assign`` command) when the broadcaster connects.
    assign: bool = False
    #: The live console and its API need an arbiter token to be viewed (None: while the round is delayed).
    private_console: bool | None = None


@dataclass(frozen=True, slots=True)
class Tournament:
    event: str
    site: str
    time_control: str
    round: int
    rounds: dict[int, Round]
    brokers: tuple[BrokerConfig, ...] = (BrokerConfig(),)
    settings: BroadcastSettings = field(default_factory=BroadcastSettings)
    report: Report = field(default_factory=Report)

    def current_round(self) -> Round:
        return self.rounds[self.round]

    def delay_seconds(self, number: int | None = None) -> float:
        """The broadcast delay of a round (its own, else the tournament's), in seconds."""
        rnd = self.rounds.get(self.round if number is None else number)
        minutes = rnd.delay_minutes if rnd is not None and rnd.delay_minutes is not None \
            else self.settings.delay_minutes
        return minutes * 60.0

    def lichess_targets(self, number: int | None = None) -> tuple[LichessTarget, ...]:
        """Where a round is pushed on lichess (``[broadcast] lichess_round`` is the file's ``round``'s)."""
        number = self.round if number is None else number
        rnd = self.rounds.get(number)
        if rnd is not None and rnd.lichess:
            return rnd.lichess
        return ()

    def round_date(self, number: int | None = None) -> dt.date:
        """The round's date from the file, else today's (UTC)."""
        rnd = self.rounds.get(self.round if number is None else number)
        if rnd is not None and rnd.date is not None:
            return rnd.date
        return dt.datetime.now(dt.UTC).date()


def _opt_int(value: Any, what: str, low: int | None = None, high: int | None = None) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TournamentError(f"{what} must be an integer, not {value!r}")
    try:
        number = int(value)
    except ValueError as exc:
        raise TournamentError(f"{what} must be an integer, not {value!r}") from exc
    if (low is not None and number < low) or (high is not None and number > high):
        raise TournamentError(f"{what} must be between {low} and {high}, not {number}")
    return number


def _strict_int(value: Any, what: str, low: int, high: int) -> int | None:
    """An optional TOML integer: a quoted number is refused (``elo = "2101"``: the pairing program's export
    put it in quotes, or another column slipped in)."""
    return None if value is None else _whole(value, what, low, high)


def _whole(value: Any, what: str, low: int, high: int) -> int:
    """A TOML integer (a quoted number is refused: ``board = "7"`` may be a typo for another key's value)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TournamentError(f"{what} must be an integer written without quotes, not {value!r}")
    if not low <= value <= high:
        raise TournamentError(f"{what} must be between {low} and {high}, not {value}")
    return value


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise TournamentError(f"{what} must be true or false (without quotes), not {value!r}")
    return value


def _opt_text(raw: dict[str, Any], key: str, what: str) -> str | None:
    """An optional string setting (a number where a string belongs is refused, not turned into one)."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise TournamentError(f"{what} must be a non-empty string in quotes, not {value!r}")
    return value


def _number(value: Any, what: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise TournamentError(f"{what} must be a number between {low:g} and {high:g}, not {value!r}")
    return float(value)


def _text(value: Any, what: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise TournamentError(f"{what} must be a non-empty string, not {value!r}")
    return value.strip()


def _table(value: Any, what: str, known: Iterable[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TournamentError(f"{what} must be a table, not {value!r}")
    check_keys(value, known, what)
    return value


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise TournamentError(f"{what} must be a list of tables ([[{what}]]), not {value!r}")
    return value


def _player(raw: Any, what: str) -> Player:
    if isinstance(raw, str):
        return Player(str(_text(raw, f"{what} name")))
    if not isinstance(raw, dict):
        raise TournamentError(f"{what} must be a name or a table with a name")
    check_keys(raw, PLAYER_KEYS, what)
    title = raw.get("title")
    if title is not None and title != "":
        from touchmove.broadcast.trf import TITLE_LETTERS

        full = TITLE_LETTERS.get(title.lower(), title.upper()) if isinstance(title, str) else None
        if full not in TITLES:
            raise TournamentError(f"{what}.title must be one of FIDE's titles {' '.join(TITLES)}, not {title!r}")
        title = full
    fed = _text(raw.get("federation"), f"{what}.federation", required=False)
    sex = raw.get("sex")
    if sex is not None and sex not in ("m", "w"):
        raise TournamentError(f"{what}.sex must be \"m\" or \"w\" (the TRF's letters), not {sex!r}")
    birth = raw.get("birth")
    if isinstance(birth, dt.date):
        birth = birth.strftime("%Y/%m/%d")
    if birth is not None and not isinstance(birth, str):
        raise TournamentError(f"{what}.birth must be a date (1990-04-01), not {birth!r}")
    return Player(
        name=str(_text(raw.get("name"), f"{what}.name")),
        fide_id=_strict_int(raw.get("fide_id"), f"{what}.fide_id", 1, 10**10),
        title=str(title) if title else None,
        elo=_strict_int(raw.get("elo"), f"{what}.elo", 0, 4000),
        federation=fed.upper() if fed else None,
        sex=sex, birth=birth or None,
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


def _start(value: Any, what: str) -> dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError as exc:
            raise TournamentError(f"{what}: not a date and time: {value!r}") from exc
    if not isinstance(value, dt.datetime):
        raise TournamentError(f"{what}: a date and time is needed (2026-11-29T15:00:00+01:00), not {value!r}")
    if value.tzinfo is None:
        raise TournamentError(f"{what}: give the time zone (2026-11-29T15:00:00+01:00 or ...Z)")
    return value


def _board_range(value: Any, what: str) -> range:
    """``"1-64"``, ``"65"`` or ``[1, 64]``: an inclusive range of board numbers."""
    low: Any
    high: Any
    if isinstance(value, str) and value.strip():
        low, _, high = value.partition("-")
        high = high or low
    elif isinstance(value, list) and len(value) == 2:
        low, high = value
    else:
        raise TournamentError(f"{what} must be a board range such as \"1-64\", not {value!r}")
    a = _opt_int(low.strip() if isinstance(low, str) else low, what, 1, MAX_BOARD)
    b = _opt_int(high.strip() if isinstance(high, str) else high, what, 1, MAX_BOARD)
    if a is None or b is None or b < a:
        raise TournamentError(f"{what} must be a board range such as \"1-64\", not {value!r}")
    return range(a, b + 1)


def _round_id(value: Any, what: str) -> str:
    rid = _text(value, what)
    assert rid is not None
    if not rid.isalnum():
        raise TournamentError(f"{what} must be a lichess round id (letters and digits), not {value!r}")
    return rid


def _round_ids(value: Any, what: str) -> tuple[str, ...]:
    """``lichess_round``: one lichess round id, or a list of them (a round split over several)."""
    if isinstance(value, list):
        if not value:
            raise TournamentError(f"{what} must name at least one lichess round")
        ids = tuple(_round_id(v, f"{what} #{i + 1}") for i, v in enumerate(value))
        if len(set(ids)) != len(ids):
            raise TournamentError(f"{what} names a lichess round twice")
        return ids
    return (_round_id(value, what),)


def _spread(ids: tuple[str, ...], pairings: list[Pairing], max_games: int, what: str) -> list[LichessTarget]:
    """The boards in board order over the lichess rounds ``ids``, ``max_games`` a round (the first ones
    full; a round with no board left gets none)."""
    boards = sorted(p.board for p in pairings)
    needed = -(-len(boards) // max_games)
    if needed > len(ids):
        listed = ", ".join(f'"{i}"' for i in ids)
        raise TournamentError(
            f"{what}: {len(boards)} boards, above lichess's {max_games} per round, need {needed} lichess rounds: "
            f"lichess_round = [{listed}, ...] with {needed} round ids (boards in board order, {max_games} each)")
    return [LichessTarget(rid, range(chunk[0], chunk[-1] + 1))
            for rid, chunk in zip(ids, (boards[k:k + max_games] for k in range(0, len(boards), max_games)),
                                  strict=False)]


def _lichess(raw: dict[str, Any], pairings: list[Pairing], number: int, max_games: int,
             default_round: tuple[str, ...] | None) -> tuple[LichessTarget, ...]:
    what = f"round {number}"
    targets: list[LichessTarget] = []
    if raw.get("lichess_round") is not None:
        if raw.get("lichess") is not None:
            raise TournamentError(f"{what}: give lichess_round or [[rounds.lichess]], not both")
        default_round = _round_ids(raw["lichess_round"], f"{what} lichess_round")
    if raw.get("lichess") is not None:
        for i, item in enumerate(_list(raw["lichess"], "rounds.lichess")):
            item_t = _table(item, f"{what} lichess #{i + 1}", LICHESS_KEYS)
            targets.append(LichessTarget(_round_id(item_t.get("round_id"), f"{what} lichess #{i + 1} round_id"),
                                         _board_range(item_t.get("boards"), f"{what} lichess #{i + 1} boards")))
    elif default_round is not None:
        targets += _spread(default_round, pairings, max_games, what)
    for i, t in enumerate(targets):
        count = sum(1 for p in pairings if p.board in t.boards)
        if count > max_games:
            raise TournamentError(
                f"{what}: lichess round {t.round_id} would get {count} boards, above lichess's {max_games} per "
                f"round: split the boards with [[rounds.lichess]] boards = \"1-{max_games}\", round_id = ...")
        for other in targets[:i]:
            if set(t.boards) & set(other.boards):
                raise TournamentError(f"{what}: lichess board ranges {t.boards.start}-{t.boards.stop - 1} and "
                                      f"{other.boards.start}-{other.boards.stop - 1} overlap")
    return tuple(targets)


def _round(raw: Any, settings: dict[str, Any]) -> Round:
    if not isinstance(raw, dict):
        raise TournamentError("every [[rounds]] entry must be a table")
    if raw.get("number") is None:
        raise TournamentError("every [[rounds]] needs a number")
    number = _whole(raw.get("number"), "[[rounds]] number", 1, 10_000)
    check_keys(raw, ROUND_KEYS, f"round {number}")
    boards = _list(raw.get("boards", []), "rounds.boards")
    if not boards:
        raise TournamentError(f"round {number} has no boards ([[rounds.boards]])")
    pairings: list[Pairing] = []
    for i, b in enumerate(boards):
        try:
            pairings.append(_pairing(b, i, number))
        except TournamentError as exc:
            if exc.board is None and isinstance(b, dict) and isinstance(b.get("board_id"), str):
                exc.board = (number, b["board_id"])
            raise
    numbers = [p.board for p in pairings]
    if len(set(numbers)) != len(numbers):
        raise TournamentError(f"round {number}: board numbers repeat")
    ids = [p.board_id for p in pairings]
    if len(set(ids)) != len(ids):
        raise TournamentError(f"round {number}: a board id is used twice")
    _check_players(pairings, number)
    byes: list[tuple[Player, str]] = []
    for i, item in enumerate(_list(raw.get("byes", []), "rounds.byes")):
        what = f"round {number} bye #{i + 1}"
        item = _table(item, what, BYE_KEYS)
        kind = item.get("type")
        if kind not in BYE_TYPES:
            raise TournamentError(f"{what}: type must be one of {', '.join(BYE_TYPES)}, not {kind!r}")
        byes.append((_player(item.get("player"), f"{what}.player"), str(kind)))
    _check_players([*pairings, *(Pairing(0, "", p, Player("(bye)")) for p, _ in byes)], number)
    delay = raw.get("delay_minutes")
    return Round(
        number, _date(raw.get("date"), f"round {number} date"),
        tuple(sorted(pairings, key=lambda p: p.board)),
        start=_start(raw.get("start"), f"round {number} start"),
        delay_minutes=None if delay is None else _number(delay, f"round {number} delay_minutes", 0,
                                                         MAX_DELAY_MINUTES),
        lichess=_lichess(raw, pairings, number, settings["max_games"], settings.get("default_round")),
        byes=tuple(byes),
    )


def _pairing(b: Any, i: int, number: int) -> Pairing:
    """Return the ``i``-th board of round ``number`` (a [[rounds.boards]] table)."""
    what = f"round {number} board #{i + 1}"
    b = _table(b, what, BOARD_KEYS)
    board = _whole(b.get("board", i + 1), f"{what}: board", 1, MAX_BOARD)
    board_id = b.get("board_id")
    if board_id is None:
        raise TournamentError(f"{what}: board_id (the bridge's board id) is required")
    if not isinstance(board_id, str) or not board_id.strip():
        raise TournamentError(f"{what}: board_id must be the bridge's board id as a string "
                              f"(board_id = \"{board_id}\"), not {board_id!r}")
    if any(c in board_id for c in "/+#") or board_id != board_id.strip():
        raise TournamentError(f"{what}: board_id {board_id!r} cannot be an MQTT topic level")
    result = b.get("result")
    forfeit = False
    if result is not None:
        if not isinstance(result, str):
            raise TournamentError(f"{what}: result must be a string such as \"1-0\", not {result!r}")
        norm = normalize_result(result)
        if norm is None:
            raise TournamentError(f"{what}: unknown result {result!r}")
        forfeit = result.strip().lower() in FORFEIT_SPELLINGS and norm != "*"
        result = None if norm == "*" else norm
    return Pairing(
        board=board if board is not None else i + 1,
        board_id=board_id,
        white=_player(b.get("white"), f"{what}.white"),
        black=_player(b.get("black"), f"{what}.black"),
        result=result, forfeit=forfeit,
    )


def _player_keys(player: Player) -> list[tuple[str, str]]:
    """Who a player is: the name (case and spacing ignored), and the FIDE id when given."""
    keys = [("name", " ".join(player.name.casefold().split()))]
    if player.fide_id is not None:
        keys.append(("fide_id", str(player.fide_id)))
    return keys


def _check_players(pairings: list[Pairing], number: int) -> None:
    """Refuse a player paired against himself, or on two boards of one round (one line, naming both): the same
    FIDE id twice, or the same name twice unless both have FIDE ids and they differ (two players of one name)."""
    seen: dict[tuple[str, str], tuple[int, Player]] = {}

    def same(a: Player, b: Player, key: tuple[str, str]) -> bool:
        return key[0] == "fide_id" or a.fide_id is None or b.fide_id is None or a.fide_id == b.fide_id

    for p in pairings:
        white_keys, black_keys = _player_keys(p.white), _player_keys(p.black)
        if any(k in black_keys and same(p.white, p.black, k) for k in white_keys):
            raise TournamentError(f"round {number} board {p.board}: {p.white.name} plays against himself",
                                  (number, p.board_id))
        players = ((white_keys, p.white), (black_keys, p.black)) if p.board_id else ((white_keys, p.white),)
        for keys, player in players:        # (a bye's "board" has no id, and its opponent is no player)
            for key in keys:
                if key in seen and same(seen[key][1], player, key):
                    raise TournamentError(f"round {number}: {player.name} plays on boards {seen[key][0]} and "
                                          f"{p.board}", (number, p.board_id) if p.board_id else None)
            for key in keys:
                seen.setdefault(key, (p.board, player))


def _broker(raw: Any) -> BrokerConfig:
    if not isinstance(raw, dict):
        raise TournamentError("[[brokers]] entries must be tables")
    check_keys(raw, BROKER_KEYS, "[[brokers]]")
    bases = raw.get("bases", raw.get("base", "touchmove"))
    if isinstance(bases, str):
        bases = [bases]
    if not isinstance(bases, list) or not all(isinstance(b, str) and b for b in bases):
        raise TournamentError("brokers.bases must be a list of base topics")
    for key in ("url", "username", "password", "password_env", "ca_file", "share_group", "password_file",
                "cert_file", "key_file"):
        _opt_text(raw, key, f"brokers.{key}")
    if "tls" in raw:
        _flag(raw["tls"], "brokers.tls")
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
        standby = raw.get("events_standby", False)
        if not isinstance(standby, bool):
            raise TournamentError("brokers.events_standby must be true or false")
        if standby and len(nodes) < 2:
            raise TournamentError("brokers.events_standby needs the urls of two nodes or more")
        return dataclasses.replace(
            cfg, host=first.host, port=first.port, password=password, tls=context_tls or first.tls,
            fallbacks=tuple(dataclasses.replace(n, tls=n.tls or context_tls) for n in nodes[1:]),
            cert_file=raw.get("cert_file"), key_file=raw.get("key_file"), subscribe_qos=qos,
            events_standby=standby)
    except BrokerSettingError as exc:
        raise TournamentError(f"[[brokers]] {exc}") from exc


def parse_tournament(data: dict[str, Any], *, base_dir: Path | None = None) -> Tournament:
    """Build the model from parsed TOML; relative paths are taken from ``base_dir``."""
    check_keys(data, TOP_KEYS, "the file")
    for key in ("event", "round"):
        if key not in data:
            raise TournamentError(f"missing top-level key {key!r}")
    current = _whole(data["round"], "round", 1, 10_000)
    raw_b = _table(data.get("broadcast", {}), "[broadcast]", BROADCAST_KEYS)
    max_games = int(_opt_int(raw_b.get("lichess_max_games", LICHESS_MAX_GAMES), "broadcast.lichess_max_games",
                             1, LICHESS_MAX_GAMES_LIMIT) or LICHESS_MAX_GAMES)
    default_round = raw_b.get("lichess_round") or None
    if default_round is not None:
        default_round = _round_ids(default_round, "broadcast.lichess_round")
    rounds: dict[int, Round] = {}
    for raw in _list(data.get("rounds", []), "rounds"):
        number = raw.get("number") if isinstance(raw, dict) else None
        rnd = _round(raw, {"max_games": max_games,
                           "default_round": default_round if number == current else None})
        if rnd.number in rounds:
            raise TournamentError(f"round {rnd.number} is given twice")
        rounds[rnd.number] = rnd
    if current is None or current not in rounds:
        raise TournamentError(f"round {data['round']!r} has no [[rounds]] entry with its pairings")
    out = Path(str(_text(raw_b.get("output_dir", "broadcast"), "broadcast.output_dir")))
    if not out.is_absolute() and base_dir is not None:
        out = base_dir / out
    token = _opt_text(raw_b, "token", "broadcast.token") or os.environ.get(TOKEN_ENV) or None
    token_file = raw_b.get("lichess_token_file")
    if token_file is not None:
        token_file = Path(str(_text(token_file, "broadcast.lichess_token_file")))
        if not token_file.is_absolute() and base_dir is not None:
            token_file = base_dir / token_file
    assign = _flag(raw_b.get("assign", False), "broadcast.assign")
    settings = BroadcastSettings(
        output_dir=out,
        host=str(_text(raw_b.get("host", "127.0.0.1"), "broadcast.host")),
        port=_whole(raw_b.get("port", 8080), "broadcast.port", 0, 65535),
        token=str(token) if token else None,
        lichess_round=default_round,
        lichess_url=str(_text(raw_b.get("lichess_url", "https://lichess.org"), "broadcast.lichess_url")).rstrip("/"),
        lichess_interval=_number(raw_b.get("lichess_interval", 2.0), "broadcast.lichess_interval", 0.1, 3600),
        lichess_max_games=max_games,
        lichess_token_file=token_file,
        delay_minutes=_number(raw_b.get("delay_minutes", 0), "broadcast.delay_minutes", 0, MAX_DELAY_MINUTES),
        assign=assign,
        private_console=None if raw_b.get("private_console") is None
        else _flag(raw_b["private_console"], "broadcast.private_console"),
    )
    try:
        brokers = tuple(_broker(b) for b in _list(data.get("brokers", [{}]), "brokers"))
    except TournamentError:
        raise
    except ValueError as exc:  # a URL that does not parse (bad port, bad address)
        raise TournamentError(f"[[brokers]]: {exc}") from None
    if not brokers:
        raise TournamentError("at least one [[brokers]] entry is needed")
    return Tournament(
        report=_report(data.get("report")),
        event=str(_text(data["event"], "event")),
        site=str(_text(data.get("site", "?"), "site")),
        time_control=str(_text(data.get("time_control", "?"), "time_control")),
        round=current,
        rounds=rounds,
        brokers=brokers,
        settings=settings,
    )


def _report(raw: Any) -> Report:
    if raw is None:
        return Report()
    raw = _table(raw, "[report]", REPORT_KEYS)
    deputies = raw.get("deputy_arbiters", [])
    if not isinstance(deputies, list) or not all(isinstance(d, str) and d.strip() for d in deputies):
        raise TournamentError("report.deputy_arbiters must be a list of names")
    rounds = raw.get("rounds")
    return Report(
        federation=(_opt_text(raw, "federation", "report.federation") or "").upper(),
        chief_arbiter=_opt_text(raw, "chief_arbiter", "report.chief_arbiter") or "",
        deputy_arbiters=tuple(d.strip() for d in deputies),
        type=_opt_text(raw, "type", "report.type") or "",
        rounds=None if rounds is None else _whole(rounds, "report.rounds", 1, 10_000),
        allotted_time=_opt_text(raw, "allotted_time", "report.allotted_time") or "",
    )


def load_tournament(path: str | os.PathLike[str]) -> Tournament:
    """Read and check a tournament TOML file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TournamentError(f"{p}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise TournamentError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise TournamentError(f"{p}: {exc.strerror or exc}") from exc
    try:
        return parse_tournament(data, base_dir=p.parent)
    except TournamentError as exc:
        line = board_line(text, *exc.board) if exc.board else None
        if line is None:
            raise
        raise TournamentError(f"{p} line {line}: {exc}", exc.board) from None


def board_line(text: str, number: int, board_id: str) -> int | None:
    """Return the line (from 1) of round ``number``'s entry of ``board_id`` in a tournament file's text, or
    None when it cannot be told (the first line naming the id after the round's ``number = N``)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if re.match(rf"\s*number\s*=\s*{number}\s*(#.*)?$", line)), 0)
    quoted = (f'"{board_id}"', f"'{board_id}'")
    for i in range(start, len(lines)):
        if any(q in lines[i] for q in quoted):
            return i + 1
    return None
