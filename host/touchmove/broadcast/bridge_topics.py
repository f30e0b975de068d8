"""The bridge's MQTT messages as the broadcaster reads them: decoded payloads, commands.

The topics and payload types are :mod:`touchmove.mqtt.wire`'s (the one contract of the bridge, the broadcaster,
the broker's rules and the tests); this module decodes what arrives on them. Events are checked against the
engine's own event types by :func:`touchmove.mqtt.events.check_event`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import chess

from touchmove.mqtt import wire

BOARD_KINDS = wire.BOARD_LEAVES
BRIDGE_KINDS = wire.BRIDGE_LEAVES


@dataclass(frozen=True, slots=True)
class BridgeMessage:
    """One message from a bridge: which base and board it is about, what kind, and its decoded payload."""

    base: str
    board_id: str | None
    kind: str
    payload: Any
    retained: bool = False


def subscriptions(base: str, share_group: str | None = None) -> list[str]:
    """The topic filters a broadcaster subscribes to for one bridge base topic (see
    :func:`touchmove.mqtt.wire.broadcaster_filters`: with ``share_group`` the events are a shared subscription)."""
    return wire.broadcaster_filters(base, share_group)


def set_topic(base: str, board_id: str) -> str:
    """A board's command topic."""
    return wire.set_topic(base, board_id)


def command(name: str, **fields: Any) -> bytes:
    """A command payload for a board's ``set`` topic."""
    return json.dumps({"command": name, **fields}, separators=(",", ":")).encode()


def _decode(kind: str, raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    if kind == "pgn":
        return text
    if kind == "availability":
        stripped = text.strip()
        if stripped.startswith("{"):
            try:
                obj = json.loads(stripped)
            except ValueError:
                return None
            return obj.get("state") if isinstance(obj, dict) else None
        return stripped.strip('"') or None
    if not text.strip():
        return None  # a cleared retained topic
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def parse(topic: str, payload: bytes, bases: tuple[str, ...] | list[str], retained: bool = False
          ) -> BridgeMessage | None:
    """Decode a message from one of ``bases``; None for other topics and undecodable payloads."""
    where = wire.parse_topic(topic, bases)
    if where is None:
        return None
    kind = where.leaf if where.board is not None else "bridge_" + where.leaf
    return BridgeMessage(where.base, where.board, kind, _decode(where.leaf, payload), retained)


def occupancy_mask(value: Any) -> int | None:
    """The occupancy of a state payload as a python-chess bitmask (bit ``chess.A1`` = 1 << 0).

    The bridge sends 16 hex digits (bit i is square i, a1 = 0 ... h8 = 63). Also accepted: an integer
    mask; ``0x`` hex or a decimal string; a list of square names; 64 characters of 0/1 from a1 to h8.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value & chess.BB_ALL
    if isinstance(value, list):
        mask = 0
        for name in value:
            if not isinstance(name, str) or name.lower() not in chess.SQUARE_NAMES:
                return None
            mask |= chess.BB_SQUARES[chess.parse_square(name.lower())]
        return mask
    if isinstance(value, str):
        s = value.strip().lower()
        if len(s) == 64 and set(s) <= {"0", "1"}:
            return sum(1 << i for i, c in enumerate(s) if c == "1")
        try:
            if s.startswith("0x") or len(s) == 16:
                return int(s, 16) & chess.BB_ALL
            return int(s, 10) & chess.BB_ALL
        except ValueError:
            return None
    return None


@dataclass(frozen=True, slots=True)
class BoardState:
    """The fields of a board's retained state that the broadcaster uses."""

    game: int | None
    fen: str | None
    ply: int | None
    last_move: str | None
    in_sync: bool | None
    occupancy: int | None


def board_state(payload: dict[str, Any]) -> BoardState:
    def opt_int(key: str) -> int | None:
        v = payload.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    last = payload.get("last_move")
    if isinstance(last, dict):
        last = last.get("san") or last.get("uci")
    in_sync = payload.get("in_sync")
    fen = payload.get("fen")
    return BoardState(
        game=opt_int("game"),
        fen=fen if isinstance(fen, str) else None,
        ply=opt_int("ply"),
        last_move=last if isinstance(last, str) else None,
        in_sync=in_sync if isinstance(in_sync, bool) else None,
        occupancy=occupancy_mask(payload.get("occupancy")),
    )
