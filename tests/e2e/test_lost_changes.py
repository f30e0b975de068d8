"""End to end: the board unplugged mid-game for 0.3, 1, 3 and 10 s (everything it sends meanwhile is lost; it sends
its hello and a snapshot when plugged back). The real firmware (MicroPython, sim driver) -> pty -> daemon ->
Mosquitto -> subscriber. Each ends with the whole game on MQTT, in the journal and in ``export``; where the
lost plies are truly ambiguous, after a ``changes_lost`` alert with candidates and an arbiter's ``resync``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import chess
import pytest

from tests.e2e.helpers import OPERA, game_moves, simple_timeline
from tests.e2e.rig import BOARD_ID, Rig
from touchmove.bridge.journal import Journal
from touchmove.export import pgn_games

MOVES = game_moves(OPERA)
# A move every 3.5 s of device time: at speed 10, one every 0.35 s; 10 s unplugged loses most of the game.
TIMELINE = simple_timeline(MOVES, t0=2000, think=2800, hand=120)
SPEED = 10
COMMAND = f"touchmove/boards/{BOARD_ID}/set"


def sure_plies(events: list[dict[str, object]]) -> int:
    """Return how many plies the bridge has published (the last position it is sure of)."""
    plies = [e["ply"] for e in events if e["type"] in ("move", "move_amended") and isinstance(e["ply"], int)]
    return max(plies, default=0)


def command(rig: Rig, payload: dict[str, object]) -> dict[str, object]:
    """Publish a board command; return its answer."""
    assert rig.sub is not None
    transaction = f"{payload['command']}-{time.monotonic()}"
    rig.sub.publish(COMMAND, json.dumps({**payload, "transaction": transaction}))
    topic = f"touchmove/boards/{BOARD_ID}/response"
    rig.sub.wait_for(lambda: (r := rig.sub.last(topic)) is not None  # type: ignore[union-attr]
                     and r.json().get("transaction") == transaction, 10, "the answer")
    answer = rig.sub.last(topic)
    assert answer is not None
    return answer.json()  # type: ignore[no-any-return]


def resync_until_accepted(rig: Rig, sure: int | None = None) -> list[dict[str, object]]:
    """Act as the arbiter: give the plies since the last sure position, longest first, until one is accepted."""
    answers: list[dict[str, object]] = []
    sure = sure_plies(rig.events()) if sure is None else sure
    board = chess.Board()
    for move in MOVES[:sure]:
        board.push(move)
    for count in range(len(MOVES) - sure, 0, -1):
        sans = []
        replay = board.copy()
        for move in MOVES[sure:sure + count]:
            sans.append(replay.san(move))
            replay.push(move)
        answers.append(command(rig, {"command": "resync", "moves": sans}))
        if answers[-1]["status"] == "ok":
            return answers
    raise AssertionError(f"no resync accepted: {answers}")


@pytest.mark.parametrize("seconds", [0.3, 1.0, 3.0, 10.0])
def test_unplugged_mid_game(tmp_path: Path, seconds: float) -> None:
    rig = Rig(tmp_path, TIMELINE, speed=SPEED)
    try:
        rig.start()
        started = time.monotonic()
        rig.wait_moves(8)
        rig.board.unplug()
        time.sleep(seconds)
        rig.board.plug()
        finished = False
        # The board's timeline ends this long after its start (device time runs SPEED times faster): wait for it.
        deadline = max(started + TIMELINE[-1]["t"] / SPEED / 1000, time.monotonic()) + 4
        while time.monotonic() < deadline:
            events = rig.events()
            if any(e["type"] == "game_end" for e in events):
                finished = True
                break
            time.sleep(0.5)
        lost = [e for e in rig.events() if e["type"] == "alert" and e.get("code") == "changes_lost"]
        if seconds >= 1.0:
            assert lost or "seq gap" not in rig.daemon_log(), rig.daemon_log()[-2500:]
        if not finished:
            # Truly ambiguous (or more plies lost than searched): the alert says so, the arbiter resyncs.
            assert lost and any(not a["detail"].get("plies") for a in lost), lost  # type: ignore[union-attr]
            resync_until_accepted(rig)
        else:
            # The plies recovered may be another order of the same plies (a transposition: the board cannot tell
            # them apart; the alert lists the other orders): the arbiter takes back to the first wrong ply and
            # gives the right ones.
            got = rig.moves()
            want = [m.uci() for m in MOVES]
            wrong = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
            if wrong is not None:
                assert any(a["detail"].get("other_orders") for a in lost), (got, lost)  # type: ignore[union-attr]
                assert command(rig, {"command": "takeback", "ply": wrong + 1})["status"] == "ok"
                resync_until_accepted(rig, wrong)
        stats = rig.assert_full_game(MOVES, timeout=40)
        assert stats["events"] > 0
        assert not [e for e in rig.events() if e["type"] == "alert" and e.get("code") == "illegal_move"]
        # `export` (the journal replayed) gives the same game.
        games = pgn_games(Journal.open(rig.journal), BOARD_ID, 200)
        assert list(games[0].mainline_moves()) == MOVES
    finally:
        rig.stop()
