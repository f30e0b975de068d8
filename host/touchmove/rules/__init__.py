"""The rules engine: occupancy records in, moves and arbiter alerts out.

Pure and synchronous: no I/O and no wall clock. All timing comes from the records' ``t``.

    engine = Engine(settle_ms=200)
    for record in records:
        for event in engine.feed(record):
            ...
    events = engine.finish()
"""

from touchmove.rules.engine import Engine, EngineState, GameRecord
from touchmove.rules.events import (
    ALERT_ARTICLES,
    ALERT_MEANINGS,
    Alert,
    AmendmentWithdrawn,
    ClockPress,
    DeclaredEnd,
    Event,
    GameEnd,
    GameResumed,
    GameStart,
    MoveAmended,
    MoveMade,
    RecoveredMove,
    ResultRejected,
    ResyncRejected,
    Takeback,
    Touch,
)

__all__ = [
    "ALERT_ARTICLES",
    "ALERT_MEANINGS",
    "Alert",
    "AmendmentWithdrawn",
    "ClockPress",
    "DeclaredEnd",
    "Engine",
    "EngineState",
    "Event",
    "GameEnd",
    "GameRecord",
    "GameResumed",
    "GameStart",
    "MoveAmended",
    "MoveMade",
    "RecoveredMove",
    "ResultRejected",
    "ResyncRejected",
    "Takeback",
    "Touch",
]
