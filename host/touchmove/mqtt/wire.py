"""The MQTT wire contract between the bridge, the broadcaster, the broker's rules and the tests: the topic
tree, the shape of every payload (``TypedDict``) and their validation, in one place.

Topic tree (``<base>`` is a bridge's base topic, default ``touchmove``; docs/mqtt.md is the prose)::

    <base>/bridge/state                 retained  BridgeState       {"state": "online" | "offline", ...}
    <base>/bridge/info                  retained  BridgeInfo        {version, session, started, settle_ms, boards}
    <base>/bridge/request/<cmd>         in        BridgeRequest     health_check, boards, snapshot, leds
    <base>/bridge/response/<cmd>        out       Response
    <base>/boards/<id>/availability     retained  Availability
    <base>/boards/<id>/state            retained  BoardState
    <base>/boards/<id>/events           QoS 1     EventEnvelope and the engine event's own fields (QoS 0 on
                                                  connections of their own with ``[mqtt] events_qos = 0``;
                                                  consumers take each ``seq`` once, in order)
    <base>/boards/<id>/pgn              retained  the current game's PGN (text; the bridge reads it back once
                                                  after a crash while its journal could not write)
    <base>/boards/<id>/set              in        BoardCommand
    <base>/boards/<id>/response         out       Response

Only this module spells topics: everything else calls the builders below. Validation of incoming commands
is :mod:`touchmove.mqtt.schema`'s (re-exported here); :func:`problem_in_state` checks a published state.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple, NotRequired, TypedDict

from touchmove.mqtt.schema import (
    AVAILABILITY,
    BOARD_COMMANDS,
    BRIDGE_REQUESTS,
    EVENT_ENVELOPE,
    STATE,
    decode_payload,
    transaction_of,
    validate,
)

__all__ = [
    "BOARD_COMMANDS", "BRIDGE_REQUESTS", "EVENT_ENVELOPE", "decode_payload", "transaction_of", "validate",
]

DEFAULT_BASE = "touchmove"

BRIDGE = "bridge"
BOARDS = "boards"
#: What a bridge publishes per board, and about itself.
BOARD_LEAVES = ("availability", "state", "events", "pgn", "response")
BRIDGE_LEAVES = ("state", "info")
#: Where commands come in.
SET = "set"
REQUEST = "request"
RESPONSE = "response"
ANY = "+"


# -- payloads ---------------------------------------------------------------------------------------------
class Availability(TypedDict):
    state: Literal["online", "offline"]


class BridgeState(TypedDict):
    """``<base>/bridge/state``: the last will says offline; problems (journal, ports) while online."""

    state: Literal["online", "offline"]
    problems: NotRequired[list[dict[str, Any]]]


class BridgeInfo(TypedDict):
    version: str
    session: str
    started: str
    settle_ms: NotRequired[int]
    boards: list[str]


class BoardState(TypedDict):
    board: str
    game: int
    ply: int
    fen: str
    last_move: str | None
    in_sync: bool
    occupancy: str
    game_over: bool
    session: str
    ts: str


class EventEnvelope(TypedDict):
    """The fields every event on ``<base>/boards/<id>/events`` carries around the engine's own."""

    type: str
    game: int
    t: int
    board: str
    seq: int
    session: str
    ts: str


class BoardCommand(TypedDict):
    """``<base>/boards/<id>/set``: ``command`` names one of :data:`BOARD_COMMANDS`, whose fields follow."""

    command: str
    transaction: NotRequired[str | int]


class BridgeRequest(TypedDict, total=False):
    transaction: str | int
    board: str


class Response(TypedDict):
    status: Literal["ok", "error"]
    transaction: NotRequired[str | int | None]
    error: NotRequired[str]


# -- time ------------------------------------------------------------------------------------------------
def iso_now() -> str:
    """Return the UTC time as ISO-8601 with milliseconds and a Z (events' and replies' ``ts``, the journal's)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- topics -----------------------------------------------------------------------------------------------
def board_topic(base: str, board: str, leaf: str) -> str:
    """Return ``<base>/boards/<board>/<leaf>`` (``board`` may be ``+`` for a filter)."""
    return f"{base}/{BOARDS}/{board}/{leaf}"


def bridge_topic(base: str, leaf: str) -> str:
    """Return ``<base>/bridge/<leaf>`` (``state``, ``info``)."""
    return f"{base}/{BRIDGE}/{leaf}"


def request_topic(base: str, cmd: str) -> str:
    """Return ``<base>/bridge/request/<cmd>`` (``cmd`` may be ``+``)."""
    return f"{base}/{BRIDGE}/{REQUEST}/{cmd}"


def response_topic(base: str, cmd: str) -> str:
    """Return ``<base>/bridge/response/<cmd>``."""
    return f"{base}/{BRIDGE}/{RESPONSE}/{cmd}"


def set_topic(base: str, board: str) -> str:
    """Return a board's command topic, ``<base>/boards/<board>/set``."""
    return board_topic(base, board, SET)


def command_filters(base: str) -> tuple[str, str]:
    """Return the filters a bridge subscribes to: every board's ``set`` and every bridge request."""
    return set_topic(base, ANY), request_topic(base, ANY)


def broadcaster_filters(base: str, share_group: str | None = None) -> list[str]:
    """Return the filters a broadcaster subscribes to for one base. With ``share_group`` the event stream is a
    shared subscription (``$share/<group>/...``); retained topics are never shared (brokers do not send
    retained messages to shared subscriptions), so every consumer still sees each board's state."""
    events = board_topic(base, ANY, "events")
    if share_group:
        events = f"$share/{share_group}/{events}"
    return [bridge_topic(base, "state"), bridge_topic(base, "info"),
            *(board_topic(base, ANY, leaf) for leaf in ("availability", "state", "pgn", "response")), events]


def bridge_writes(base: str) -> list[str]:
    """Return the filters a bridge publishes to under its base (broker rules)."""
    return [*(bridge_topic(base, leaf) for leaf in BRIDGE_LEAVES), response_topic(base, ANY),
            *(board_topic(base, ANY, leaf) for leaf in ("events", "state", "pgn", "availability", "response"))]


def bridge_reads(base: str) -> list[str]:
    """Return the filters a bridge reads (broker rules): its commands, and its boards' retained PGN (read back once
    after a restart that followed a crash while its journal could not write: the plies it had published)."""
    return [*command_filters(base), published_filter(base)]


def published_filter(base: str) -> str:
    """Return the filter of every board's retained PGN under ``base``, which a bridge reads back after a restart."""
    return board_topic(base, ANY, "pgn")


def everything(base: str) -> str:
    """Return the filter of every topic under ``base``."""
    return f"{base}/#"


#: Every account may publish and read ``<PROBE_PREFIX>/<its user name>/#``: the readiness and doctor probe.
PROBE_PREFIX = "touchmove-doctor"


def probe_topic(user: str, leaf: str) -> str:
    """Return a probe topic of ``user`` (``leaf`` ``#`` for the filter of all of them)."""
    return f"{PROBE_PREFIX}/{user}/{leaf}"


class Topic(NamedTuple):
    """A topic taken apart: its base, the board (None for the bridge's own topics) and the leaf."""

    base: str
    board: str | None
    leaf: str


def parse_topic(topic: str, bases: Sequence[str]) -> Topic | None:
    """Return the parts of one of the bridge's published topics under one of ``bases``, else None."""
    for base in bases:
        if not topic.startswith(base + "/"):
            continue
        rest = topic[len(base) + 1:].split("/")
        if len(rest) == 2 and rest[0] == BRIDGE and rest[1] in BRIDGE_LEAVES:
            return Topic(base, None, rest[1])
        if len(rest) == 3 and rest[0] == BOARDS and rest[2] in BOARD_LEAVES and rest[1]:
            return Topic(base, rest[1], rest[2])
    return None


def command_of(topic: str, base: str) -> tuple[str, str] | None:
    """Return ``("set", board)`` or ``("request", cmd)`` for a command topic under ``base``, else None."""
    rest = topic[len(base) + 1:].split("/") if topic.startswith(base + "/") else []
    if len(rest) == 3 and rest[0] == BOARDS and rest[2] == SET:
        return SET, rest[1]          # the board id is the caller's to check (it may be refused)
    if len(rest) == 3 and rest[0] == BRIDGE and rest[1] == REQUEST:
        return REQUEST, rest[2]
    return None


# -- validation of what the bridge publishes ----------------------------------------------------------------
def problem_in_state(payload: Any) -> str | None:
    """Return None when ``payload`` is a valid :class:`BoardState`, else the first problem."""
    return validate(payload, STATE, envelope=())


def problem_in_availability(payload: Any) -> str | None:
    """Return None when ``payload`` is a valid :class:`Availability`, else the first problem."""
    return validate(payload, AVAILABILITY, envelope=())


def problem_in_event(payload: Any) -> str | None:
    """Return None when ``payload`` carries the whole :class:`EventEnvelope`, else the first missing field."""
    if not isinstance(payload, dict):
        return "payload must be a JSON object"
    missing = [name for name in EVENT_ENVELOPE if name not in payload]
    return f"missing field {missing[0]!r}" if missing else None
