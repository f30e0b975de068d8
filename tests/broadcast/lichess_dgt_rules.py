"""The field rules of lichess's reader of LiveChess Cloud JSON (lila's ``DgtJson``, as listed in issue 36), as
a checker: a document lichess would fail to parse gets a list of what is wrong (empty: it reads).

Round index: ``pairings`` required, a list; each pairing's ``white``/``black`` optional objects whose names
(``fname``, ``mname``, ``lname``) and ``title`` are strings (or null) and ``fideid`` an integer (or null);
``result`` optional, a string. Game: ``moves`` a list of strings ``"SAN"``, ``"SAN seconds"`` or
``"SAN seconds+spent"``; ``result`` optional (a string or null); ``clock`` optional (null), but when present an
object with an integer ``time`` (and ``white``/``black`` integers or null); ``chess960`` optional, an integer.
"""

from __future__ import annotations

import re
from typing import Any

import chess

MOVE = re.compile(r"^\S+( \d+(\+\d+)?)?$")


def _int(value: Any) -> bool:
    return type(value) is int


def _opt(value: Any, check: Any) -> bool:
    return value is None or check(value)


def index_problems(doc: Any) -> list[str]:
    if not isinstance(doc, dict) or not isinstance(doc.get("pairings"), list):
        return ["pairings: required, a list"]
    out = []
    for i, pairing in enumerate(doc["pairings"]):
        if not isinstance(pairing, dict):
            out.append(f"pairing {i}: not an object")
            continue
        for side in ("white", "black"):
            player = pairing.get(side)
            if player is None:
                continue
            if not isinstance(player, dict):
                out.append(f"pairing {i}.{side}: not an object")
                continue
            for key in ("fname", "mname", "lname", "title"):
                if not _opt(player.get(key), lambda v: isinstance(v, str)):
                    out.append(f"pairing {i}.{side}.{key}: not a string")
            if not _opt(player.get("fideid"), _int):
                out.append(f"pairing {i}.{side}.fideid: not an integer")
        if not _opt(pairing.get("result"), lambda v: isinstance(v, str)):
            out.append(f"pairing {i}.result: not a string")
    return out


def game_problems(doc: Any) -> list[str]:
    if not isinstance(doc, dict):
        return ["not an object"]
    out = []
    moves = doc.get("moves")
    if not isinstance(moves, list) or not all(isinstance(m, str) and MOVE.match(m) for m in moves):
        out.append(f"moves: a list of 'SAN [seconds[+spent]]' strings, not {moves!r}")
    if not _opt(doc.get("result"), lambda v: isinstance(v, str)):
        out.append("result: not a string")
    clock = doc.get("clock")
    if clock is not None:
        if not isinstance(clock, dict) or not _int(clock.get("time")):
            out.append(f"clock: present without an integer time: {clock!r}")
        elif not all(_opt(clock.get(side), _int) for side in ("white", "black")):
            out.append(f"clock: white/black not integers: {clock!r}")
    if "chess960" in doc and not _opt(doc["chess960"], _int):
        out.append("chess960: not an integer")
    return out


def sans(doc: dict[str, Any], start: chess.Board | None = None) -> list[str]:
    """The game's moves as lichess reads them (the SAN before the space), checked legal one after another;
    returns them as UCI."""
    board = start.copy() if start is not None else chess.Board()
    out = []
    for text in doc["moves"]:
        move = board.parse_san(text.split(" ")[0])
        out.append(move.uci())
        board.push(move)
    return out
