"""The engine's events as the wire carries them (``<base>/boards/<id>/events``): one typed contract that their
readers decode them with (the broadcaster's :mod:`touchmove.broadcast.bridge_ingest`, the LiveChess API's
:mod:`touchmove.livechess.eboards`).

The contract is built when this module is imported, from :mod:`touchmove.rules.events`'s event classes: each
class's ``type`` and its fields with their types (:data:`EVENT_FIELDS`). A new event class is in it at once, and
a field's type changed there is checked as such here: nothing to keep in step by hand. What this module adds is
what a reader needs beyond that: the fields an event is useless without (:data:`NEEDED`: a move's ply and UCI),
the plausible range of its numbers, and the values of a few strings (a result, a move in UCI notation).

:func:`check_event` returns why an event cannot be used, or None. A field may be absent or ``null`` unless
needed (an older bridge, or a board that cannot tell); fields the contract does not know are left alone (the
envelope's ``seq``, ``session``, ``ts`` are the callers'). An unknown type is refused as such ("unknown event
type ..."): a newer bridge may send more, and the callers skip those quietly.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator
from typing import Any, Literal, get_args, get_origin, get_type_hints

from touchmove.rules import events as engine

#: No game is longer than this many plies (the 75-move rule ends any game far below it).
MAX_PLY = 10_000
MAX_GAME = 10**9
MAX_CLOCK_MS = 10**9
RESULT_VALUES = frozenset({"1-0", "0-1", "1/2-1/2", "*"})
_UCI = frozenset("abcdefgh12345678qrbn")


def _json_types(hint: Any) -> tuple[type, ...]:
    """Return the Python types a JSON value of a field annotated ``hint`` may decode to (``None`` aside)."""
    origin = get_origin(hint)
    if origin is Literal:
        return tuple(dict.fromkeys(type(arg) for arg in get_args(hint)))
    if origin in (types.UnionType, typing.Union):
        return tuple(dict.fromkeys(t for arg in get_args(hint) if arg is not type(None) for t in _json_types(arg)))
    if origin is not None:
        return (origin,)              # dict[str, Any] -> dict, list[str] -> list
    return (hint,)


def event_classes(root: type[engine.Event] = engine.Event) -> Iterator[type[engine.Event]]:
    """Yield every event class of :mod:`touchmove.rules.events` (below ``root``)."""
    for cls in root.__subclasses__():
        yield cls
        yield from event_classes(cls)


def type_name(cls: type[engine.Event]) -> str:
    """Return the ``type`` an event class's events carry (its property returns a constant)."""
    getter = typing.cast(property, cls.type).fget
    assert getter is not None
    name = getter(cls)
    assert isinstance(name, str), cls
    return name


def _contract() -> dict[str, dict[str, tuple[type, ...]]]:
    """Return each event type's fields (beyond ``type``) and the types their JSON values may have; an event
    type written by more than one class (a recovered ``move``, a declared ``game_end``) has all their fields."""
    found: dict[str, dict[str, tuple[type, ...]]] = {}
    for cls in event_classes():
        hints = get_type_hints(cls, vars(engine))
        fields = found.setdefault(type_name(cls), {})
        for f in dataclasses.fields(cls):
            fields[f.name] = tuple(dict.fromkeys((*fields.get(f.name, ()), *_json_types(hints[f.name]))))
    return found


#: Event type -> its fields -> the types of their JSON values, from :mod:`touchmove.rules.events`.
EVENT_FIELDS: dict[str, dict[str, tuple[type, ...]]] = _contract()
#: The event types the readers take.
EVENT_TYPES = frozenset(EVENT_FIELDS)
#: What a reader cannot use an event without.
NEEDED: dict[str, frozenset[str]] = {
    "move": frozenset({"ply", "uci"}), "move_amended": frozenset({"ply", "uci"}),
    "amendment_withdrawn": frozenset({"ply"}), "clock": frozenset({"ply"}), "takeback": frozenset({"ply"}),
    "game_end": frozenset({"result"}), "alert": frozenset({"code"}),
}
#: Fields every event may carry, whatever its type declares: readers key events on them (an alert seen is
#: ``(game, ply, code, seq)``), so a ``ply`` that is a list on an event whose class has no ``ply`` is refused too.
COMMON: dict[str, tuple[type, ...]] = {"game": (int,), "ply": (int,)}
#: Fields a bridge adds to an engine event of these types (a board's clock reading with a move).
ADDED: dict[str, dict[str, tuple[type, ...]]] = {"move": {"clock_ms": (int,)}, "move_amended": {"clock_ms": (int,)}}

_SAID = {int: "an integer", str: "a string", bool: "true or false", dict: "an object", list: "a list"}


def _in(value: int, low: int, high: int) -> bool:
    return low <= value <= high


def _value_problem(kind: str, name: str, value: Any) -> str | None:
    """Why a field's value, of the right type, cannot be (a number out of range, a string not one of its values)."""
    if name == "game" and not _in(value, 0, MAX_GAME):
        return f"{kind}: game must be an integer 0..{MAX_GAME}"
    if name == "ply":
        low = 1 if "ply" in NEEDED.get(kind, ()) else 0
        if not _in(value, low, MAX_PLY):
            return f"{kind}: ply must be an integer {low}..{MAX_PLY}"
    if name == "clock_ms" and not _in(value, 0, MAX_CLOCK_MS):
        return f"{kind}: clock_ms must be an integer 0..{MAX_CLOCK_MS}"
    if name == "remaining" and not _in(value, -MAX_CLOCK_MS, MAX_CLOCK_MS):
        return f"{kind}: remaining must be an integer (milliseconds) or null"
    if name == "uci" and (not 4 <= len(value) <= 5 or not set(value) <= _UCI):
        return f"{kind}: uci must be a move in UCI notation"
    if kind == "game_end" and name == "result" and value not in RESULT_VALUES:
        return "game_end: result must be 1-0, 0-1, 1/2-1/2 or *"
    if kind == "alert" and name == "code" and not 0 < len(value) <= 100:
        return "alert: code must be a non-empty string"
    return None


def check_event(event: dict[str, Any]) -> str | None:
    """Why a board's event cannot be used (its type, a field missing, a field's type or range), or None when it
    can. The check against the game (a ply no further than one past it) is the game's."""
    kind = event.get("type")
    if not isinstance(kind, str):
        return "no type"
    fields = EVENT_FIELDS.get(kind)
    if fields is None:
        return f"unknown event type {kind[:40]!r}"
    needed = NEEDED.get(kind, frozenset())
    for name, allowed in {**COMMON, **fields, **ADDED.get(kind, {})}.items():
        value = event.get(name)
        if value is None:
            if name in needed:
                return f"{kind}: {name} is missing"
            continue
        if type(value) not in allowed:
            return f"{kind}: {name} must be {' or '.join(_SAID.get(t, t.__name__) for t in allowed)}"
        problem = _value_problem(kind, name, value)
        if problem is not None:
            return problem
    return None
