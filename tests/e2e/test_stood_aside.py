"""End to end: the piece just moved stood aside by the hand that captures it, in the combinations the simple case
does not cover (issue 35). The real firmware (MicroPython, sim driver) -> pty -> daemon -> Mosquitto ->
subscriber: the game as played on MQTT, in the journal and in ``export``, with no ``board_mismatch``.

1.e4 e5 2.Nf3 Nc6 3.Bc4 Bc5 4.Ng5 Qxg5 5.d4 Bb6: black lifts the knight from g5, stands it on h4 (where it could
have gone: read as Nh4, moved after release), takes it off and lands Qxg5.

* ``touched``: between Ng5 and the stand aside, white straightens his bishop on c4 (lifted and put back); the knight
  stands on h4 300 ms. The capture on the square the knight touched down on is read when it lands.
* ``stood long``: the knight stands on h4 800 ms (longer than a piece stood aside for a moment): the board then
  contradicts Nh4 with no reading that expects it, and the last plies are re-read (the one line that accounts for
  every change seen since: Ng5 Qxg5).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import chess
import pytest

from tests.e2e.helpers import exported_moves, journal_moves, simple_timeline
from tests.e2e.rig import Rig

SPEED = 10
OPENING = [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5")]
GAME = [*OPENING, *(chess.Move.from_uci(u) for u in ("f3g5", "d8g5", "d2d4", "c5b6"))]


def timeline(*, touched: bool, stand_ms: int) -> list[dict[str, Any]]:
    """Return the board's records (device time): the opening plainly, then Ng5 stood aside before Qxg5."""
    out = simple_timeline(OPENING, t0=1500, think=900, hand=150)
    t = out[-1]["t"]

    def rec(kind: str, square: str, gap: int) -> None:
        nonlocal t
        t += gap
        out.append({"t": t, "type": kind, "sq": square})

    rec("lift", "f3", 1200)
    rec("place", "g5", 150)
    if touched:
        rec("lift", "c4", 1200)
        rec("place", "c4", 200)
    rec("lift", "g5", 1200)
    rec("place", "h4", 100)
    rec("lift", "h4", stand_ms)
    rec("lift", "d8", 200)
    rec("place", "g5", 700)
    rec("lift", "d2", 2500)
    rec("place", "d4", 150)
    rec("lift", "c5", 2500)
    rec("place", "b6", 150)
    rec("lift", "h7", 3000)     # (h7 straightened: the last ply rests, no move)
    rec("place", "h7", 150)
    return out


@pytest.mark.parametrize("touched,stand_ms", [(True, 300), (False, 800)], ids=["touched", "stood long"])
def test_a_piece_stood_aside_then_captured_comes_back(tmp_path: Path, touched: bool, stand_ms: int) -> None:
    records = timeline(touched=touched, stand_ms=stand_ms)
    rig = Rig(tmp_path, records, speed=SPEED)
    want = [m.uci() for m in GAME]
    try:
        sub = rig.start()
        # the board's timeline ends this long after its start (device time runs SPEED times faster)
        sub.wait_for(lambda: rig.moves() == want, records[-1]["t"] / SPEED / 1000 + 20,
                     f"the game on MQTT: {want}")
        events = rig.events()
        codes = [e.get("code") for e in events if e["type"] == "alert"]
        assert "board_mismatch" not in codes and "illegal_move" not in codes, codes
        # the knight's move was read as Nh4 and corrected: the consumers saw the correction
        amended = [e["uci"] for e in events if e["type"] == "move_amended" and e["ply"] == 7]
        assert amended[-1:] == ["f3g5"], amended
        sub.wait_for(lambda: journal_moves(rig.journal, "fw1") == want, 10, "the game in the journal")
        deadline = time.monotonic() + 5
        while exported_moves(rig.journal, "fw1", tmp_path) != want and time.monotonic() < deadline:
            time.sleep(0.5)
        assert exported_moves(rig.journal, "fw1", tmp_path) == want
    finally:
        rig.stop()
