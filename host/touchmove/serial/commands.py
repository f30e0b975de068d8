"""Commands from the host to a board (wire protocol v1): one NDJSON line each."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import chess

#: Up to this many squares a ``leds`` command lists them by name; more go as a 64-bit mask (every square fits
#: in one command line: the firmware reads at most 256 bytes a line).
LEDS_BY_NAME = 8


def leds_command(squares: Iterable[str], color: Sequence[int]) -> dict[str, Any]:
    """Return the ``leds`` command lighting ``squares`` (names such as "e2") in ``color``."""
    names = list(dict.fromkeys(squares))
    if len(names) <= LEDS_BY_NAME:
        return {"cmd": "leds", "squares": names, "color": list(color)}
    mask = 0
    for name in names:
        mask |= 1 << chess.parse_square(name.lower())
    return {"cmd": "leds", "mask": f"{mask:016x}", "color": list(color)}


def encode_command(cmd: dict[str, Any]) -> bytes:
    """Return a host-to-board command as one NDJSON line."""
    return json.dumps(cmd, separators=(",", ":")).encode() + b"\n"
