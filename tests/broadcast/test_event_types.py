"""Every event the rules engine can emit is one the broadcaster reads (none is skipped as an unknown type)."""

from __future__ import annotations

import ast
from pathlib import Path

from touchmove.broadcast import bridge_topics
from touchmove.rules import events


def engine_event_types() -> set[str]:
    """Return the ``type`` strings of the engine's event classes, read from rules/events.py."""
    tree = ast.parse(Path(events.__file__).read_text())
    found: set[str] = set()
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "type"):
            for ret in (n for n in ast.walk(fn) if isinstance(n, ast.Return)):
                if isinstance(ret.value, ast.Constant) and isinstance(ret.value.value, str):
                    found.add(ret.value.value)
    return found


def test_every_engine_event_type_is_read_by_the_broadcaster() -> None:
    types = engine_event_types()
    assert "amendment_withdrawn" in types and "move" in types
    assert types <= bridge_topics.EVENT_TYPES, types - bridge_topics.EVENT_TYPES


def test_a_withdrawn_amendment_is_checked_and_shown() -> None:
    event = {"type": "amendment_withdrawn", "game": 1, "t": 900, "ply": 3, "uci": "f1c4", "withdrawn": "f1b5",
             "alert": "moved_after_release"}
    assert bridge_topics.check_event(event) is None
    assert bridge_topics.check_event({**event, "ply": 0}) is not None
