"""The scenario corpus format: a start position, the hands' steps, and what the engine must say.

Steps are a compact way to write a recording; each becomes one record of the recording format:

* ``e2-`` lifts e2, ``e4+`` places on e4; 80 ms pass between records (a quick hand) unless said otherwise:
* ``~N`` lets N ms pass instead; ``.`` is a rest of 600 ms instead (longer than the settle time: released);
  several of them add up;
* ``clock:w`` / ``clock:b`` press a clock; ``promote:n`` chooses a piece; ``snap:HEX`` is a snapshot,
  ``beat:HEX`` a heartbeat;
* ``clear`` lifts every occupied square (a1 to h8); ``arrange`` places a piece on every empty square of the
  standard start array (ranks 1, 2, 7, 8), 150 ms apart: the board cleared and set up again;
* a JSON object is a record as it stands (``t`` is added).

A scenario with ``"as": "snapshots"`` is seen by a board that reports every change as a whole-board snapshot:
each lift and place becomes a ``snapshot`` of the occupancy after it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess

from touchmove import records
from touchmove.records import Record

STEP_MS = 80
REST_MS = 600
SCENARIO_DIR = Path(__file__).parent / "scenarios"


@dataclass
class Scenario:
    name: str
    about: str
    fen: str | None
    chess960: bool
    records: list[Record]
    expect: dict[str, Any]
    settle_ms: int | None = None
    source: str = ""
    tags: list[str] = field(default_factory=list)


START = chess.BB_RANK_1 | chess.BB_RANK_2 | chess.BB_RANK_7 | chess.BB_RANK_8


def steps_to_records(steps: list[Any], fen: str | None = None, t0: int = 1000) -> list[Record]:
    """Return the records the steps describe, from the position ``fen`` (standard by default)."""
    out: list[Record] = []
    t = t0
    occ = chess.Board(fen or chess.STARTING_FEN, chess960=True).occupied
    gap = 0
    explicit = False

    def wait(ms: int) -> None:
        nonlocal gap, explicit
        gap = gap + ms if explicit else ms
        explicit = True

    def emit(obj: dict[str, Any]) -> None:
        nonlocal t, gap, explicit, occ
        t += gap
        out.append(records.from_dict({**obj, "t": t}))
        if obj["type"] in ("lift", "place"):
            occ ^= chess.BB_SQUARES[chess.parse_square(obj["sq"])]
        elif obj["type"] in ("snapshot", "heartbeat"):
            occ = int(obj["occ"], 16)
        gap, explicit = STEP_MS, False

    for step in steps:
        if isinstance(step, dict):
            emit(step)
            continue
        for token in str(step).split():
            if token == ".":
                wait(REST_MS)
            elif token.startswith("~"):
                wait(int(token[1:]))
            elif token.startswith("clock:"):
                emit({"type": "clock", "side": {"w": "white", "b": "black"}[token[6:]]})
            elif token.startswith("promote:"):
                emit({"type": "promote", "piece": token[8:]})
            elif token.startswith("snap:"):
                emit({"type": "snapshot", "occ": token[5:]})
            elif token.startswith("beat:"):
                emit({"type": "heartbeat", "occ": token[5:]})
            elif token[-1] in "+-" and len(token) == 3:
                emit({"type": "place" if token[-1] == "+" else "lift", "sq": token[:2]})
            elif token in ("clear", "arrange"):
                squares = occ if token == "clear" else START & ~occ
                for sq in chess.scan_forward(squares):
                    emit({"type": "lift" if token == "clear" else "place", "sq": chess.square_name(sq)})
                    wait(150)
            else:
                raise ValueError(f"unknown step {token!r}")
    if explicit:
        t += gap
        out.append(records.Snapshot(t, occ, "heartbeat"))
    return out


def as_snapshots(recording: list[Record], fen: str | None = None) -> list[Record]:
    """Return the recording as a board that reports only whole-board snapshots would send it."""
    occ = chess.Board(fen or chess.STARTING_FEN, chess960=True).occupied
    out: list[Record] = [records.Snapshot(recording[0].t if recording else 0, occ)]
    for record in recording:
        if isinstance(record, records.Lift | records.Place):
            occ ^= chess.BB_SQUARES[record.sq]
            out.append(records.Snapshot(record.t, occ))
        else:
            out.append(record)
    return out


def load_all() -> list[Scenario]:
    """Return every scenario of the corpus, file by file."""
    scenarios = []
    for path in sorted(SCENARIO_DIR.glob("*.json")):
        for item in json.loads(path.read_text()):
            recording = steps_to_records(item["steps"], item.get("fen"))
            if item.get("as") == "snapshots":
                recording = as_snapshots(recording, item.get("fen"))
            scenarios.append(Scenario(
                name=item["name"],
                about=item.get("about", ""),
                fen=item.get("fen"),
                chess960=item.get("chess960", False),
                records=recording,
                expect=item["expect"],
                settle_ms=item.get("settle_ms"),
                source=path.name,
                tags=item.get("tags", []),
            ))
    return scenarios
