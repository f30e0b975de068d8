"""Schemas of the MQTT payloads: the commands the bridge accepts, and what it publishes.

A schema is a dict ``field -> Field``; :func:`validate` checks a decoded payload against one and returns the
first problem as a message (or None). Unknown fields are errors, so a typo never passes silently.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from touchmove import board_ids
from touchmove.records import fen_problem

#: Largest command payload accepted (bytes).
MAX_PAYLOAD = 4096
#: Deepest nesting of arrays and objects accepted in a command (the schemas need 2).
MAX_DEPTH = 16

_SQUARE = re.compile(r"^[a-h][1-8]$")


@dataclass(frozen=True)
class Field:
    kind: type | tuple[type, ...]
    required: bool = False
    choices: tuple[Any, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    max_len: int | None = None
    check: str | None = None      # a named extra check: "fen", "squares", "color", "board_id"


Schema = dict[str, Field]

_TRANSACTION = Field((str, int), max_len=128)
_TEXT = Field(str, max_len=200)

#: Commands on ``<base>/boards/<id>/set``, by ``command``.
BOARD_COMMANDS: dict[str, Schema] = {
    "new_game": {},
    "setup": {"fen": Field(str, required=True, max_len=200, check="fen"), "chess960": Field(bool)},
    "promote": {"piece": Field(str, required=True, choices=("q", "r", "b", "n"))},
    "takeback": {"ply": Field(int, required=True, minimum=1, maximum=10_000)},
    "resync": {"moves": Field(list), "fen": Field(str, max_len=200, check="fen")},
    "result": {"result": Field(str, required=True, choices=("1-0", "0-1", "1/2-1/2")),
               "reason": Field(str, required=True, max_len=40)},
    "assign": {"round": _TEXT, "board": _TEXT, "white": _TEXT, "black": _TEXT, "event": _TEXT,
               "site": _TEXT},
}

#: Requests on ``<base>/bridge/request/<cmd>``.
BRIDGE_REQUESTS: dict[str, Schema] = {
    "health_check": {},
    "boards": {},
    "snapshot": {"board": Field(str, required=True, max_len=64, check="board_id")},
    "leds": {"board": Field(str, required=True, max_len=64, check="board_id"), "squares": Field(list, check="squares"),
             "color": Field(list, check="color"), "clear": Field(bool)},
}

#: What the bridge publishes (checked by the tests, and documented in README).
STATE: Schema = {
    "board": Field(str, required=True), "game": Field(int, required=True), "ply": Field(int, required=True),
    "fen": Field(str, required=True, check="fen"), "last_move": Field((str, type(None)), required=True),
    "in_sync": Field(bool, required=True), "occupancy": Field(str, required=True),
    "game_over": Field(bool, required=True), "session": Field(str, required=True),
    "ts": Field(str, required=True),
}
AVAILABILITY: Schema = {"state": Field(str, required=True, choices=("online", "offline"))}
EVENT_ENVELOPE = ("type", "game", "t", "board", "seq", "session", "ts")


def _extra(check: str, value: Any) -> str | None:
    if check == "board_id":
        return board_ids.id_problem(value)
    if check == "fen":
        problem = fen_problem(value, chess960=True)
        if problem is not None:
            return f"invalid FEN ({problem})"
    elif check == "squares":
        if len(value) > 64 or not all(isinstance(s, str) and _SQUARE.match(s) for s in value):
            return "must be a list of square names such as \"e4\""
    elif check == "color" and (len(value) != 3 or not all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in value)):
        return "must be [r, g, b] with each 0..255"
    return None


def validate(payload: Any, schema: Schema, *, envelope: tuple[str, ...] = ("transaction",)) -> str | None:
    """Return None when ``payload`` matches ``schema`` (and ``envelope`` keys), else the first problem."""
    if not isinstance(payload, dict):
        return "payload must be a JSON object"
    for name, value in payload.items():
        if name in envelope:
            continue
        spec = schema.get(name)
        if spec is None:
            return f"unknown field {name!r}"
        if isinstance(value, bool) and spec.kind in (int, (str, int)):
            return f"{name!r} has the wrong type (bool)"
        if not isinstance(value, spec.kind):
            return f"{name!r} has the wrong type ({type(value).__name__})"
        if spec.choices is not None and value not in spec.choices:
            return f"{name!r} must be one of {', '.join(map(str, spec.choices))}"
        if spec.minimum is not None and isinstance(value, int) and value < spec.minimum:
            return f"{name!r} must be >= {spec.minimum}"
        if spec.maximum is not None and isinstance(value, int) and value > spec.maximum:
            return f"{name!r} must be <= {spec.maximum}"
        if spec.max_len is not None and isinstance(value, str) and len(value) > spec.max_len:
            return f"{name!r} is too long"
        if spec.check is not None:
            problem = _extra(spec.check, value)
            if problem:
                return f"{name!r} {problem}"
    for name, spec in schema.items():
        if spec.required and name not in payload:
            return f"missing field {name!r}"
    if "transaction" in envelope and "transaction" in payload:
        tr = payload["transaction"]
        if isinstance(tr, bool) or not isinstance(tr, (str, int)) or (isinstance(tr, str) and len(tr) > 128):
            return "'transaction' must be a string or integer"
    return None


def decode_payload(raw: bytes | bytearray) -> tuple[Any, str | None]:
    """Return ``(object, None)`` for a JSON payload (empty means ``{}``), or ``(None, problem)``."""
    if len(raw) > MAX_PAYLOAD:
        return None, f"payload larger than {MAX_PAYLOAD} bytes"
    if not raw.strip():
        return {}, None
    depth = nesting_depth(bytes(raw))
    if depth > MAX_DEPTH:
        return None, f"payload nested {depth} levels deep (at most {MAX_DEPTH})"
    try:
        return json.loads(raw), None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return None, f"payload is not JSON ({exc})"


def nesting_depth(raw: bytes) -> int:
    """Return how deep arrays and objects nest in a JSON text (brackets inside strings not counted)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:          # backslash
                escaped = True
            elif byte == 0x22:          # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):      # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):      # ] }
            depth -= 1
    return deepest


def transaction_of(payload: Any) -> Any:
    """Return the payload's valid ``transaction`` (echoed in replies), or None."""
    if isinstance(payload, dict):
        tr = payload.get("transaction")
        if isinstance(tr, str) and len(tr) <= 128:
            return tr
        if isinstance(tr, int) and not isinstance(tr, bool):
            return tr
    return None
