"""Vendor boards gone wrong (issue 35), end to end: floods of random DGT field updates, DGT board dumps, random
bytes, ChessLink status and Chessnut reports for 20 s, all at once on one real bridge (``touchmove run``) with a
private Mosquitto, beside a DGT board playing a game. No result at the arbiter's strength comes out of any of
them, the bridge's log grows by less than 2 MB, and the game beside them comes back whole."""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import chess
import chess.pgn

from tests.boards.rig import emulator_argv
from tests.e2e.helpers import Broker, Subscriber, journal_moves, start_daemon, unique_moves
from touchmove.sim import timeline
from touchmove.sim.demo import DEFAULT_PGN, read_game
from touchmove.sim.pieces import piece_timeline
from touchmove.sim.ptyboard import PtyBoard

OPERA = list(read_game(DEFAULT_PGN).mainline_moves())
#: The floods, each on a port of its own: (kind, port name, protocol, board id in the bridge).
FLOODS = (("dgt-fields", "dgtA", "dgt", "dgt-11111"), ("dgt-dumps", "dgtB", "dgt", "dgt-22222"),
          ("dgt-bytes", "dgtC", "dgt", "dgt-33333"), ("chesslink-status", "clA", "chesslink", "chesslink-clA"),
          ("chessnut-reports", "cnA", "chessnut", "chessnut-cnA"))
FLOOD_S = 20
#: Messages a second per flooding board.
RATE = 100
MAX_LOG_GROWTH = 2_000_000
#: The game beside the floods runs at the board's own speed. A DGT board's changes are stamped with the host's
#: time when they are read, times the rate, and a bridge loop busy with the floods (one lost-changes search on a
#: board of random fields takes 0.3-0.5 s of CPU) stretches every stall by the rate: at rate 4 an 80 ms stall was
#: a 320 ms rest on a slid-over square (d3 Bd7 d4 Bg4 recovered for d4 Bg4, 1 of 6 fresh-clone CI runs); at rate
#: 2, once in CI, d3 Bg4 d4 for d4 Bg4 and the game never came back in 120 s. At rate 1 a stall is what a real
#: board beside a flooding one would meet.
PLAYER_RATE = 1
#: Seconds past the game's last event (at :data:`PLAYER_RATE`) the test waits for it whole.
GAME_MARGIN_S = 40


def test_floods_declare_nothing_at_the_arbiters_strength_and_spare_the_board_beside(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    broker.start()
    journal = tmp_path / "journal.sqlite3"
    config = tmp_path / "bridge.toml"
    config.write_text(
        f'[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\n\n[serial]\nrescan_s = 0.2\nboards = [\n'
        f'  {{ port = "{tmp_path}/dgt*", protocol = "dgt", rate = 1 }},\n'
        f'  {{ port = "{tmp_path}/cl*", protocol = "chesslink", rate = 1 }},\n'
        f'  {{ port = "{tmp_path}/cn*", protocol = "chessnut", rate = 1 }},\n'
        f'  {{ port = "{tmp_path}/play*", protocol = "dgt", rate = {PLAYER_RATE} }},\n]\n\n'
        f'[journal]\npath = "{journal}"\n')
    events = piece_timeline(chess.Board(), OPERA, random.Random(7))
    path = timeline.write(tmp_path / "opera.jsonl", events)
    # The game starts once the bridge talks to the board (under load, binding it took 2 s, 8 s of the game at
    # rate 4: the first dump showed 1.e4 played, and a game not seen from its start is not published).
    player = PtyBoard(emulator_argv("dgt", path, PLAYER_RATE, chess.Board(), ("--wait-host",)), str(tmp_path / "play0"))
    floods = [PtyBoard([sys.executable, "-m", "touchmove.sim.flood", kind, "--rate", str(RATE), "--seconds",
                        str(FLOOD_S), "--serial", board_id.removeprefix("dgt-"), "--seed", str(i)],
                       str(tmp_path / port)) for i, (kind, port, _, board_id) in enumerate(FLOODS)]
    log = tmp_path / "daemon.log"
    sub = Subscriber(broker.port)
    daemon = start_daemon(config, log)
    want = [m.uci() for m in OPERA]
    try:
        sub.wait_for(lambda: sub.last("touchmove/bridge/state") is not None, 20, "the bridge online")
        for board in floods:
            board.plug()
            board.start()
        ids = [board_id for *_, board_id in FLOODS if not board_id.startswith("dgt-33333")]
        sub.wait_for(lambda: all(sub.events(b) for b in ids), 30, "every flooding board bound")
        size_before = log.stat().st_size
        begun = time.monotonic()
        player.plug()
        player.start()
        try:
            sub.wait_for(lambda: unique_moves(sub.events("dgt-12345")) == want,
                         max(e.t for e in events) / 1000 / PLAYER_RATE + GAME_MARGIN_S, "the game beside the floods")
        except AssertionError:
            raise AssertionError(what_the_player_met(sub.events("dgt-12345"), log)) from None
        time.sleep(max(0.0, begun + FLOOD_S + 3 - time.monotonic()))    # the floods over, and the claims' wait
        growth = log.stat().st_size - size_before
        ends = [e for e in sub.events() if e.get("type") == "game_end"]
    finally:
        daemon.terminate()
        daemon.wait(10)
        for board in (*floods, player):
            board.stop()
        sub.close()
        broker.stop()
    arbiter = [e for e in ends if "by" in e and e["by"] != "board"]
    assert arbiter == [], arbiter[:3]
    assert growth < MAX_LOG_GROWTH, f"the log grew by {growth} bytes"
    assert journal_moves(journal, "dgt-12345") == want
    print(f"log growth {growth} bytes; claims by the board {sum(e.get('by') == 'board' for e in ends)}")


def what_the_player_met(events: list[dict[str, Any]], log: Path) -> str:
    """Return what a failure shows of the game beside the floods: its moves and alerts (with their details), and
    the bridge's warnings about its board."""
    alerts = [f"{e.get('t')} {e.get('code')} {json.dumps(e.get('detail'))[:300]}" for e in events
              if e.get("type") == "alert"]
    warnings = [line for line in log.read_text(errors="replace").splitlines()
                if "12345" in line and " DEBUG " not in line and " INFO " not in line]
    return "\n".join([f"got {unique_moves(events)}", "alerts:", *alerts[:20], "the bridge about the board:",
                      *warnings[:30]])


def test_a_flickering_square_is_coalesced_in_the_journal_with_one_alert(tmp_path: Path) -> None:
    """e2 of a DGT board read empty and full 50 times a second for 10 s (500 field updates): a few journal
    records, one ``square_flicker`` alert naming e2, and the square's last state journaled once it is quiet."""
    broker = Broker(tmp_path)
    broker.start()
    journal = tmp_path / "journal.sqlite3"
    config = tmp_path / "bridge.toml"
    config.write_text(
        f'[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\n\n[serial]\nrescan_s = 0.2\nboards = [\n'
        f'  {{ port = "{tmp_path}/dgt*", protocol = "dgt", rate = 1 }},\n]\n\n[journal]\npath = "{journal}"\n')
    board = PtyBoard([sys.executable, "-m", "touchmove.sim.flood", "dgt-square", "--square", "e2", "--rate", "50",
                      "--seconds", "10", "--serial", "44444"], str(tmp_path / "dgt0"))
    sub = Subscriber(broker.port)
    daemon = start_daemon(config, tmp_path / "daemon.log")
    try:
        sub.wait_for(lambda: sub.last("touchmove/bridge/state") is not None, 20, "the bridge online")
        board.plug()
        board.start()
        sub.wait_for(lambda: any(e.get("code") == "square_flicker" for e in sub.events("dgt-44444")), 30,
                     "the square_flicker alert")
        sub.wait_for(lambda: "quiet again" in (tmp_path / "daemon.log").read_text(), 30, "the square quiet")
    finally:
        daemon.terminate()
        daemon.wait(10)
        board.stop()
        sub.close()
        broker.stop()
    alerts = [e for e in sub.events("dgt-44444") if e.get("code") == "square_flicker"]
    assert len(alerts) == 1 and alerts[0]["detail"]["square"] == "e2"  # type: ignore[index]
    with sqlite3.connect(journal) as db:
        bodies = [json.loads(b) for (b,) in db.execute(
            "SELECT body FROM entries WHERE board = 'dgt-44444' AND kind = 'record'").fetchall()]
    e2 = [b for b in bodies if b.get("sq") == "e2"]
    assert 0 < len(e2) <= 30, len(e2)
    assert e2[-1]["type"] == "place"     # the flood ends on the piece (an even number of changes)
