"""A one-scan misread in a DGT board dump is no move, no touch and no result (issue 35), end to end: the DGT
emulator on a pty (tests/boards/dgt_dump_glitch.py: one dump, and no field update, shows the d5 knight as a black
king beside the white king on e4, "kings in the centre", 1-0), the real bridge (``touchmove run``) and a private
Mosquitto. The game comes through whole (24 plies published, journaled and exported), with no ``game_end``, and
nothing the engine says in the seconds after the glitched dump is a touch or a move."""

from __future__ import annotations

import io
import random
import sys
import time
from datetime import datetime
from pathlib import Path

import chess
import chess.pgn

from tests.boards.rig import BoardRig
from tests.boards.test_board_claims_e2e import OPENING, REST
from touchmove.sim.pieces import Event, piece_timeline
from touchmove.sim.ptyboard import PtyBoard

EMULATOR = Path(__file__).with_name("dgt_dump_glitch.py")
#: Real time (rate 1), not 4: the bridge stamps a DGT board's changes on arrival times the rate, so an emulator run
#: 100 ms late at rate 4 read the bishop slid over d2 as resting there 385 ms (Bd2, then amended to Be3 with
#: moved_after_release: a CI run, 2026-12-06). A real board runs at rate 1.
SPEED = 1
#: The glitched dump is the first asked for this long (ms of the timeline) after 5.Ke4.
GLITCH_AFTER_MS = 1500
#: The game goes on this long (ms of the timeline) after the glitch: no genuine touch comes sooner.
QUIET_MS = 8000
#: Wall seconds after the glitched dump in which the engine must say nothing of the game (its genuine plies
#: come at least (QUIET_MS - 1000) / SPEED = 7 s later: a check is asked for every 1000 ms of board time).
WINDOW_S = 1.2
WATCHED = ("touch", "move", "move_amended", "takeback", "game_end", "game_resumed")


def game_without_glitch() -> tuple[list[chess.Move], list[Event], int]:
    """Return the 24 plies, their piece timeline (a pause after 5.Ke4) and when the glitch is due (ms)."""
    game = chess.pgn.read_game(io.StringIO(f"{OPENING} {REST} *"))
    assert game is not None and not game.errors
    moves = list(game.mainline_moves())
    board = chess.Board()
    events = piece_timeline(board, moves[:9], random.Random(35))
    for m in moves[:9]:
        board.push(m)
    assert board.piece_at(chess.D5) == chess.Piece(chess.KNIGHT, chess.BLACK) and board.king(chess.WHITE) == chess.E4
    glitch_at = max(e.t for e in events) + GLITCH_AFTER_MS
    events += piece_timeline(board, moves[9:], random.Random(36), t=glitch_at + QUIET_MS)
    return moves, sorted(events, key=lambda e: e.t), glitch_at


def wall(event: dict[str, object]) -> float:
    """Return when the bridge published ``event`` (its ``ts``), in ``time.time()`` seconds."""
    return datetime.fromisoformat(str(event["ts"])).timestamp()


def test_one_misread_board_dump_is_no_move_touch_or_result(tmp_path: Path) -> None:
    moves, events, glitch_at = game_without_glitch()
    want = [m.uci() for m in moves]
    sent_log = tmp_path / "glitch-sent"
    rig = BoardRig(tmp_path, "dgt", moves, speed=SPEED, events=events)
    # the rig's board played by the emulator whose one dump misreads d5 (plugged and started with the rig)
    rig.board = PtyBoard([sys.executable, str(EMULATOR), str(tmp_path / "timeline.jsonl"), "--speed", str(SPEED),
                          "--glitch-at", str(glitch_at), "--square", "d5", "--piece", "k", "--sent-log",
                          str(sent_log)], str(tmp_path / "ttyBOARD0"), stderr=None)
    with rig:
        rig.wait_game(want, timeout=240)
        time.sleep(1.5)       # a claim would come RESULT_STEADY_MS after the misreading: none comes
        counts = rig.counts()
    assert sent_log.exists(), "the glitched dump was never asked for"
    glitch = float(sent_log.read_text())
    seen = rig.events()
    assert counts == {"published": 24, "journaled": 24, "exported": 24}
    assert [e for e in seen if e.get("type") in ("game_end", "game_resumed", "move_amended", "takeback")] == []
    assert not {"touch_move", "touch_out_of_turn", "board_mismatch"} & set(rig.alerts()), rig.alerts()
    said = [e for e in seen if e.get("type") in WATCHED and glitch - 0.2 <= wall(e) <= glitch + WINDOW_S]
    assert said == [], said
    ply10 = [e for e in seen if e.get("type") == "touch" and e.get("ply") == 10]
    assert ply10 and all(wall(e) > glitch + WINDOW_S for e in ply10), (glitch, ply10)
