"""The events' contract (:mod:`touchmove.mqtt.events`), built from the engine's event classes: every event the
engine can emit is taken, an unknown type or a needed field missing is refused, a field of the wrong type too."""

from __future__ import annotations

import dataclasses
from typing import Any, get_type_hints

import chess
import pytest

from touchmove.mqtt import events as contract
from touchmove.rules import events as engine

#: A plausible value for each of the engine events' fields, by name.
SAMPLES: dict[str, Any] = {
    "game": 1, "t": 900, "ply": 3, "fen": chess.STARTING_FEN, "chess960": False, "sq": "e2", "piece": "P",
    "side": "white", "binds": True, "uci": "e2e4", "san": "e4", "recovered": True, "withdrawn": "e2e3",
    "alert": "moved_after_release", "remaining": 59_000, "code": "touch_move", "article": "4.3.1",
    "detail": {"square": "e2"}, "result": "1-0", "reason": "checkmate", "by": "arbiter", "declared": "0-1",
    "moves": ["e2e4"],
}


def every_engine_event() -> list[engine.Event]:
    """One event of each of the engine's event classes, every field given."""
    made = []
    for cls in contract.event_classes():
        fields = [f.name for f in dataclasses.fields(cls)]
        assert set(fields) <= set(SAMPLES), f"a sample for {set(fields) - set(SAMPLES)} of {cls.__name__}"
        made.append(cls(**{name: SAMPLES[name] for name in fields}))
    return made


def test_every_event_the_engine_can_emit_is_accepted() -> None:
    emitted = every_engine_event()
    assert {e.type for e in emitted} == contract.EVENT_TYPES
    assert {"move", "move_amended", "amendment_withdrawn", "game_resumed", "resync_rejected"} <= contract.EVENT_TYPES
    envelope = {"board": "b1", "seq": 7, "session": "s1", "ts": "2026-12-06T10:00:00.000Z"}
    for event in emitted:
        assert contract.check_event(event.to_dict()) is None, event
        assert contract.check_event({**event.to_dict(), **envelope}) is None, event


def test_the_contract_is_the_engine_classes_fields_with_their_types() -> None:
    assert contract.EVENT_FIELDS["clock"] == {"game": (int,), "t": (int,), "ply": (int,), "side": (str,),
                                              "remaining": (int,)}
    assert contract.EVENT_FIELDS["move"]["recovered"] == (bool,)     # a recovered move's field: still a move
    assert contract.EVENT_FIELDS["game_end"]["by"] == (str,)         # a declared end's
    for kind, needed in contract.NEEDED.items():
        assert needed <= set(contract.EVENT_FIELDS[kind]), kind
    hints = get_type_hints(engine.ResyncRejected, vars(engine))
    assert hints["moves"] == list[str] and contract.EVENT_FIELDS["resync_rejected"]["moves"] == (list,)


def test_an_unknown_type_is_refused_as_such() -> None:
    assert contract.check_event({"type": "move_guessed", "game": 1, "ply": 1}) == "unknown event type 'move_guessed'"
    assert contract.check_event({"game": 1}) == "no type"
    assert contract.check_event({"type": 5}) == "no type"


@pytest.mark.parametrize(("kind", "field"), sorted((k, f) for k, fields in contract.NEEDED.items() for f in fields))
def test_a_needed_field_missing_is_refused(kind: str, field: str) -> None:
    event = next(e.to_dict() for e in every_engine_event() if e.type == kind)
    assert contract.check_event(event) is None
    assert contract.check_event({k: v for k, v in event.items() if k != field}) == f"{kind}: {field} is missing"
    assert contract.check_event({**event, field: None}) == f"{kind}: {field} is missing"


def test_a_field_may_be_absent_or_null_unless_needed() -> None:
    assert contract.check_event({"type": "game_start", "game": 1}) is None
    assert contract.check_event({"type": "clock", "game": 1, "ply": 3, "side": "white", "remaining": None}) is None
    assert contract.check_event({"type": "alert", "code": "board_silent"}) is None     # a code the engine may add


@pytest.mark.parametrize(("event", "said"), [
    ({"type": "move", "game": 1, "ply": 3, "uci": "e2e4", "san": 4}, "move: san must be a string"),
    ({"type": "touch", "ply": 3, "binds": "yes"}, "touch: binds must be true or false"),
    ({"type": "move", "game": True, "ply": 3, "uci": "e2e4"}, "move: game must be an integer"),
    ({"type": "move", "game": 1, "t": 1.5, "ply": 3, "uci": "e2e4"}, "move: t must be an integer"),
    ({"type": "alert", "code": "touch_move", "detail": []}, "alert: detail must be an object"),
    ({"type": "move", "game": 1, "ply": 0, "uci": "e2e4"}, "move: ply must be an integer 1..10000"),
    ({"type": "alert", "code": "touch_move", "ply": -1}, "alert: ply must be an integer 0..10000"),
    ({"type": "move", "game": 1, "ply": 3, "uci": "e2e9"}, "move: uci must be a move in UCI notation"),
    ({"type": "game_end", "game": 1, "result": "2-0"}, "game_end: result must be 1-0, 0-1, 1/2-1/2 or *"),
    ({"type": "clock", "ply": 3, "remaining": "3 min"}, "clock: remaining must be an integer"),
    ({"type": "move", "ply": 3, "uci": "e2e4", "clock_ms": -1}, "move: clock_ms must be an integer 0..1000000000"),
    # keyed on by the readers whatever the type declares (an alert seen is (game, ply, code, seq)): hypothesis
    # found a result_rejected with "ply": [] that passed and crashed the console's alert set
    ({"type": "result_rejected", "ply": []}, "result_rejected: ply must be an integer"),
    ({"type": "resync_rejected", "game": "1"}, "resync_rejected: game must be an integer"),
])
def test_a_field_of_the_wrong_type_or_out_of_range_is_refused(event: dict[str, Any], said: str) -> None:
    assert contract.check_event(event) == said
