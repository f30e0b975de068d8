"""Games of the boards bench (bench/boards.py, harder hands) recorded as the engine read them: each board's
records as its adapter told them (tests/boards/recordings/NAME.jsonl, the recording format) and the game's moves
(index.json). Each once went wrong in the engine, the board having shown every position about the first miss;
each must come back, and without lost changes unless the index says the board's reports hide a ply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.boards.test_boards_through_engine import published
from touchmove import records
from touchmove.rules import Engine

RECORDINGS = Path(__file__).parent / "recordings"
INDEX = json.loads((RECORDINGS / "index.json").read_text())


@pytest.mark.parametrize("name", sorted(INDEX))
def test_a_recorded_game_comes_back(name: str) -> None:
    game = INDEX[name]
    engine = Engine(fen=game["fen"], settle_ms=game["settle_ms"])
    events = []
    with open(RECORDINGS / f"{name}.jsonl", encoding="utf-8") as fh:
        for line in fh:
            events += engine.feed(records.parse_line(line))
    events += engine.finish()
    assert published(events) == game["moves"], game["about"]
    lost = [e for e in events if e.type == "alert" and e.code == "changes_lost"]  # type: ignore[attr-defined]
    assert bool(lost) == game["recovered"], game["about"]
    assert "takeback" not in [e.type for e in events], game["about"]
