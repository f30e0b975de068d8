"""Vendor boards (DGT, Millennium ChessLink, Chessnut): games given back, and placement -> MQTT move latency.

Part 1, per board type, over the shared games (../shared/data/games) played by the hand model through the
board's emulator and translator on a simulated clock (touchmove.sim.harness: the protocol path of ``touchmove
run`` without the pty), once with the default hands and once with fast replies (bullet: an answer 60-120 ms after
the move it answers, within one DGT scan). The engine's settle time is the bridge's for that board: 300 ms for
DGT and ChessLink boards, 200 for Chessnut. A game is *exact* when the engine's moves are the game's, *recovered* when
they are but some came from the lost-changes search (a ``changes_lost`` alert: the scans mixed plies and the
pieces shown told which); else it is wrong and ends on ``changes_lost`` (the only alert), ``board_mismatch``,
``illegal_move`` or another alert, or is *wrong* without an alert (the figure that must stay 0); the exact
games with an alert are counted too, and of those the games with an alert that says what the hands did not do
(:data:`NAMED_BY`: no habit of the hands on the ply it names or the plies beside it names it; issue 42: no alert
in a game given back exactly unless the hands did what it names). The last figures count the games whose every
position the board's reports showed, in order (no ply hidden in a scan with the next), and how many of them came
back: all must.
With ``--per-game FILE`` each game's line is kept (a run stopped is resumed): for a game not exact, its first
miss (the first move published that is not the game's, a takeback of plies played, plies recovered after
``changes_lost``, or the plies never published), its class (*unrevealable*: the reports never showed the
position of the ply missed, of the one before or of the one after; *engine*: they did) and the hand model's
habits on those plies; ``--table FILE`` prints them as a Markdown table.

Part 2, per board type: the emulator on a pty at real speed, the real bridge (``touchmove run``) and a private
Mosquitto; the time from a piece's placement on the emulated board to the ``move`` event on MQTT (median, p90,
max over the plies of the first moves of the Opera Game).

    .venv/bin/python bench/boards.py [--games N] [--boards dgt,chesslink,chessnut]
                                     [--hands default|fast|harder|both|all|none] [--drops]
                                     [--latency-plies N] [--skip-latency] [--per-game FILE]
    .venv/bin/python bench/boards.py --table FILE

The harder hands are touchmove's own boards' harder hands all at once (``HARDER_HANDS["all at once"]``: adjustments
out of turn, knocked pieces put back, slides, bullet replies, pushed-aside captures). ``--drops`` adds the DGT link
lost mid-game with the port kept open (3 s and 20 s, the board switched off and on during the first second or
not; touchmove.sim.dgt.Drop), with the default hands.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import logging
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess
import chess.pgn
from figures import Run

from touchmove.records import Lift, Place, Snapshot
from touchmove.rules import Engine
from touchmove.rules.events import Alert, Event, MoveMade, Takeback
from touchmove.sim import hands, harness, timeline
from touchmove.sim.demo import DEFAULT_PGN, read_game
from touchmove.sim.dgt import Drop
from touchmove.sim.local_broker import LocalBroker
from touchmove.sim.pieces import Change, piece_timeline
from touchmove.sim.ptyboard import PtyBoard

REPO = Path(__file__).resolve().parents[1]
GAMES = REPO.parent / "shared" / "data" / "games"
PROTOCOLS = ("dgt", "chesslink", "chessnut")
STYLES = {"default hands": hands.Style(promote_record=False),
          "fast replies": hands.Style(promote_record=False, bullet_recapture=0.8, bullet=0.3, think_ms=(100, 600)),
          # the harder hands of touchmove's own boards, all at once (sim/hands.py): adjustments out of turn, knocked
          # pieces put back, slides, bullet replies, pushed-aside captures
          "harder hands": dataclasses.replace(hands.HARDER_HANDS["all at once"], promote_record=False)}
#: The DGT link lost mid-game (the port kept open), with the default hands: (length ms, power cycle).
DROPS = {"drop 3 s": (3000, False), "drop 3 s, power cycle": (3000, True), "drop 20 s": (20000, False),
         "drop 20 s, power cycle": (20000, True)}
BOARD_IDS = {"dgt": "dgt-12345", "chesslink": "chesslink-ttyB0", "chessnut": "chessnut-ttyB0"}


def load(limit: int) -> list[tuple[chess.Board, list[chess.Move]]]:
    logging.getLogger("chess.pgn").setLevel(logging.CRITICAL)
    out = []
    for path in sorted(GAMES.glob("*.pgn")):
        for game in hands.read_games(str(path)):
            moves = hands.playable_moves(game)
            if moves is not None:
                out.append((game.board(), moves))
    random.Random(20).shuffle(out)
    return out[:limit]


def engine_events(start: chess.Board, records: Sequence[object], settle_ms: int = 200) -> list[Event]:
    """Return what the engine says reading ``records`` from ``start`` with the settle time ``settle_ms``."""
    fen = None if start.fen() == chess.STARTING_FEN else start.fen()
    eng = Engine(fen=fen, chess960=start.chess960, settle_ms=settle_ms)
    return [e for r in records for e in eng.feed(r)] + eng.finish()  # type: ignore[arg-type]


def replay(start: chess.Board, records: Sequence[object], settle_ms: int = 200,
           events: list[Event] | None = None) -> tuple[list[str], list[str]]:
    """Return the moves the engine publishes (amendments and takebacks applied) and its alert codes (from
    ``events`` when the engine's events are given)."""
    if events is None:
        events = engine_events(start, records, settle_ms)
    moves: list[str] = []
    alerts = []
    for e in events:
        if e.type in ("move", "move_amended"):
            del moves[e.ply - 1:]
            moves.append(e.uci)
        elif e.type == "takeback":
            del moves[e.ply - 1:]
        elif e.type == "alert":
            alerts.append(e.code)
    return moves, alerts


def outcome(got: list[str], want: list[str], alerts: list[str]) -> str:
    """Return what became of one game: ``exact`` (the game's moves, no lost changes), ``recovered`` (the game's
    moves, some of them recovered after a ``changes_lost``), else the alert it ends on: ``changes_lost`` when that
    is the only kind (besides ``board_restored``), else the first other alert; ``wrong`` when no alert says so."""
    if got == want:
        return "recovered" if "changes_lost" in alerts else "exact"
    others = [a for a in alerts if a not in ("changes_lost", "board_restored")]
    if others:
        return others[0]
    return "changes_lost" if alerts else "wrong"


COLUMNS = ("exact", "recovered", "changes_lost", "board_mismatch", "illegal_move", "other alert", "wrong")


def told_positions(start: chess.Board, records: Sequence[object]) -> list[str]:
    """Return the piece placements (FEN) the records tell one after another from ``start`` (each once in a row)."""
    state = {sq: p.symbol() for sq, p in start.piece_map().items()}
    shown: list[str] = []
    for record in records:
        if isinstance(record, Lift):
            state.pop(record.sq, None)
        elif isinstance(record, Place) and record.piece is not None:
            state[record.sq] = record.piece
        elif isinstance(record, Snapshot) and record.pieces is not None:
            state = {sq: p.symbol() for sq, p in chess.BaseBoard(record.pieces).piece_map().items()}
        else:
            continue
        now = chess.BaseBoard.empty()
        for sq, symbol in state.items():
            now.set_piece_at(sq, chess.Piece.from_symbol(symbol))
        if not shown or shown[-1] != now.board_fen():
            shown.append(now.board_fen())
    return shown


def unshown_plies(start: chess.Board, moves: list[chess.Move], records: Sequence[object],
                  reports: Sequence[str] | None = None) -> list[int]:
    """Return the indices in ``moves`` of the plies whose position the board's reports never showed (after the
    positions shown before it, in order, and before the next two plies' positions unless one is the ply
    before's: a piece lifted and put back shows that again). ``reports``: the
    pieces the board's own reports showed (:attr:`touchmove.sim.harness.Run.reports`), judged instead of the
    records: a ChessLink or Chessnut status with two plies' changes shows neither ply's position, whatever order
    the adapter then tells them in."""
    shown = list(reports) if reports is not None else told_positions(start, records)
    board, positions = start.copy(stack=False), []
    for move in moves:
        board.push(move)
        positions.append(board.board_fen())
    at, out = 0, []
    for i, want in enumerate(positions):
        # a report of the next two plies' position before this ply's ends the search: the ply went by unshown
        # (a repetition shows its position again later, Kg7 Qd4+ Kg8 Qd8+ Kg7: that is not this ply shown)
        later = set(positions[i + 1:i + 3]) - {want} - set(positions[i - 1:i])    # (the ply before re-shown: a touch)
        found = None
        for k in range(at, len(shown)):
            if shown[k] == want:
                found = k
                break
            if k > at and shown[k] in later:
                break       # (the report at ``at`` is the ply before's own, whatever ply repeats it)
        if found is None:
            out.append(i)
        else:
            at = found
    return out


#: What a habit of the hands (:data:`touchmove.sim.hands.HABITS`) names: the alerts that say what the hands did on
#: that ply (4.2.1 a piece touched out of turn: an adjustment by the player not to move, the mover straightening
#: his piece after his move, a sleeve knocking a piece while it is not his turn; 4.3.1 another piece touched before
#: the move; 4.4.2 castling rook first; 7.4 a piece off its square a while, then back). Nothing names
#: ``touch_move`` for a piece the opponent touched, or for one a sleeve knocked (touching is deliberate).
NAMED_BY: dict[str, frozenset[str]] = {
    "castling rook first": frozenset({"castling_rook_first"}),
    "castling slid, rook first": frozenset({"castling_rook_first"}),
    # (a j'adoube made as the opponent's bullet move lands is before that move on the board: out of turn, 4.2.1)
    "j'adoube before the move": frozenset({"touch_move", "castling_obligation", "touch_out_of_turn"}),
    "adjustment out of turn": frozenset({"touch_out_of_turn"}),
    "adjusted after the move": frozenset({"touch_out_of_turn"}),
    "sleeve knock": frozenset({"touch_out_of_turn", "board_mismatch", "board_restored"}),
    "knocked onto a square": frozenset({"touch_out_of_turn", "board_mismatch", "board_restored"}),
    "promotion: pawn left on the last rank": frozenset({"promotion_unverified", "board_mismatch", "board_restored"}),
}
#: What a habit may be read as by a board that senses no hands: a piece of the player not to move lifted and put
#: back (his adjustment out of turn, or his straightening the piece he just moved before the press is read) is, on
#: the board, the mover touching a piece he can capture (4.3.2); no scan tells whose hand it was.
READ_AS_BY: dict[str, frozenset[str]] = {
    "adjustment out of turn": frozenset({"touch_move"}),
    "adjusted after the move": frozenset({"touch_move"}),
}
#: Alerts that say what the game's position is, not what a hand did: never the hands' to name.
GAME_FACTS = frozenset({"draw_claimable"})


def alerts_unnamed(events: Sequence[Event], habits: Sequence[Sequence[str]]) -> tuple[list[str], list[str]]:
    """Return the alerts (``code@ply``) that no habit of the hands names (:data:`NAMED_BY`) on the ply the alert is
    raised at, the one before or the one after (``habits[n]``: ply n + 1's), the game's own facts apart: those
    a habit there may be read as on a board that senses no hands (:data:`READ_AS_BY`), and the others. A
    ``board_restored`` ends the last ``board_mismatch`` before it and is named when that one was (plies made
    meanwhile move it on)."""
    read_as: list[str] = []
    others: list[str] = []
    mismatch_named = False
    for e in events:
        if not isinstance(e, Alert) or e.code in GAME_FACTS:
            continue
        near = [name for n in (e.ply - 2, e.ply - 1, e.ply) if 0 <= n < len(habits) for name in habits[n]]
        named = any(e.code in NAMED_BY.get(name, ()) for name in near)
        if e.code == "board_mismatch":
            mismatch_named = named
        if named or (e.code == "board_restored" and mismatch_named):
            continue
        (read_as if any(e.code in READ_AS_BY.get(name, ()) for name in near) else others).append(f"{e.code}@{e.ply}")
    return read_as, others


def first_miss(start: chess.Board, moves: list[chess.Move], events: Sequence[Event]) -> tuple[int, str] | None:
    """Return the first thing the engine said that was not the game as played, and its ply: a move published
    that is not the game's (or amended to one that is not), a takeback of plies played, or plies recovered after
    lost changes (``changes_lost``: published right, but not read as made), or the plies never published (the
    game stopped). None: nothing of the kind."""
    want = [m.uci() for m in moves]
    sans, board = [], start.copy(stack=False)
    for move in moves:
        sans.append(board.san(move))
        board.push(move)

    def played(ply: int) -> str:
        return sans[ply - 1] if 0 < ply <= len(sans) else "nothing"

    published: list[str] = []
    for e in events:
        if isinstance(e, MoveMade):
            del published[e.ply - 1:]
            published.append(e.uci)
            if published != want[:len(published)]:
                return e.ply, f"{e.type} {e.san} for {played(e.ply)}"
        elif isinstance(e, Takeback):
            if e.ply <= len(published):
                return e.ply, f"takeback to before {played(e.ply)}"
        elif isinstance(e, Alert) and e.code == "changes_lost":
            plies = e.detail.get("plies", [])
            return e.ply, "changes_lost, plies recovered: " + " ".join(str(p) for p in plies)
    if len(published) < len(want):
        return len(published) + 1, f"nothing published from {played(len(published) + 1)} on"
    return None


def miss_class(miss: tuple[int, str] | None, unshown: list[int]) -> str:
    """Return the class of a game not given back exactly: ``unrevealable`` when the board's reports never showed
    the position of the ply first missed, or of the one before or after it (two plies in one scan, a ply never
    reported whole); ``engine`` when they showed those positions (the engine misread evidence it had);
    ``exact`` when nothing was missed. ``unshown`` holds the indices of the plies never shown
    (:func:`unshown_plies`)."""
    if miss is None:
        return "exact"
    return "unrevealable" if {miss[0] - 2, miss[0] - 1, miss[0]} & set(unshown) else "engine"


def drop_of(events: Sequence[object], i: int, length: int, power: bool) -> Drop:
    """Return game ``i``'s drop: starting a quarter to a half of the way through its timeline."""
    end = max(getattr(e, "t", 0) for e in events)
    return Drop(random.Random(100 + i).randint(end // 4, end // 2), length, power)


def play_game(protocol: str, style_name: str, drop: tuple[int, bool] | None, i: int, start: chess.Board,
              moves: list[chess.Move]) -> dict[str, Any]:
    """Play game ``i`` through the board's emulator and translator and the engine; return what became of it (the
    per-game line :func:`games_given_back` keeps): its outcome and alerts, whether every position was shown, and
    for a game not exact the first miss, its class (:func:`miss_class`) and the habits of the plies about it."""
    style = STYLES.get(style_name, STYLES["default hands"])
    habits: list[list[str]] = []
    timeline_events = piece_timeline(start, moves, random.Random(i), style, habits=habits)
    options: dict[str, Any] = {"drops": (drop_of(timeline_events, i, *drop),)} if drop else {}
    run = harness.run(protocol, start, timeline_events, seed=i, **options)
    assert run.translator is not None
    events = engine_events(start, run.records, max(200, run.translator.min_settle_ms))
    got, alerts = replay(start, run.records, events=events)
    kind = outcome(got, [m.uci() for m in moves], alerts)
    unshown = unshown_plies(start, moves, run.records, run.reports)
    line: dict[str, Any] = {"board": protocol, "hands": style_name, "game": i, "outcome": kind, "alerts": alerts,
                            "shown": not unshown}
    line["read_as"], line["unnamed"] = alerts_unnamed(events, habits)
    if kind != "exact":
        miss = first_miss(start, moves, events)
        # the plies about the miss (indices): the one missed, the one before and after it
        near = [] if miss is None else [n for n in (miss[0] - 2, miss[0] - 1, miss[0]) if 0 <= n < len(moves)]
        hidden = [n for n in near if n in unshown]
        line.update(miss=miss, unshown=[n + 1 for n in hidden], cls=miss_class(miss, unshown),
                    habits={str(n + 1): habits[n] for n in near if habits[n]})
    return line


def case_name(protocol: str, style_name: str) -> str:
    return f"{protocol}, {style_name}"


def games_given_back(limit: int, protocols: list[str], styles: list[str], drops: list[str] | None = None,
                     per_game: Path | None = None) -> None:
    """Play the cases and print, per board and hands: exact, recovered, wrong then an alert (by the alert it ends
    on), wrong without an alert, the exact games with an alert, and the games whose every position was shown.
    With ``per_game``, each game's line is appended to that file as it is played, and games found there already
    are not played again (a long run done in parts)."""
    games = load(limit)
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    if per_game is not None and per_game.exists():
        for text in per_game.read_text().splitlines():
            kept = json.loads(text)
            done[kept["board"], kept["hands"], kept["game"]] = kept
    print(f"part 1: {len(games)} shared games per board type and hands (simulated clock); 'alerts in exact': the "
          "exact games with an alert, and the alerts they had by code; 'not the hands'': those with an alert that no "
          "habit of the hands on its ply or the plies beside it names (NAMED_BY)")
    print(f"{'board':10} {'hands':22} " + " ".join(f"{c:>14}" for c in SUMMARY) + "   wrong then alert, by the alert")
    cases: list[tuple[str, str, tuple[int, bool] | None]] = [
        (protocol, name, None) for protocol in protocols for name in styles]
    cases += [("dgt", name, DROPS[name]) for name in drops or []]
    for protocol, style_name, drop in cases:
        t0 = time.monotonic()
        lines = []
        for i, (start, moves) in enumerate(games):
            line = done.get((protocol, style_name, i))
            if line is None:
                line = play_game(protocol, style_name, drop, i, start, moves)
                if per_game is not None:
                    with per_game.open("a") as f:
                        f.write(json.dumps(line) + "\n")
            lines.append(line)
        print(summary_row(protocol, style_name, lines) + f"   ({time.monotonic() - t0:.0f} s)", flush=True)
        GIVEN_BACK.append((case_name(protocol, style_name), style_name if drop is None else "drops", lines))


#: The columns of the summary: games given back exactly, recovered, wrong then an alert, wrong with none, the
#: exact games that had an alert.
SUMMARY = ("exact", "recovered", "wrong, alert", "wrong, no alert", "alerts in exact", "not the hands'")


@dataclasses.dataclass
class Tally:
    """One case's games counted (:func:`tally`)."""

    counts: dict[str, int]  # the games by outcome (:data:`COLUMNS`)
    exact_alerts: dict[str, int]  # the alerts of the exact games, by code
    alerted_exact: int  # the exact games with an alert
    #: the exact games with an alert no habit of the hands names (:func:`alerts_unnamed`), and those alerts by code
    unnamed_exact: int
    unnamed_alerts: dict[str, int]
    shown: int  # the games whose every position was shown
    shown_back: int  # of those, the games given back


def tally(lines: list[dict[str, Any]]) -> Tally:
    """Return one case's games (their per-game lines) counted."""
    counts = dict.fromkeys(COLUMNS, 0)
    exact_alerts: dict[str, int] = {}
    unnamed_alerts: dict[str, int] = {}
    alerted_exact = unnamed_exact = shown = shown_back = 0
    for line in lines:
        kind = line["outcome"]
        counts[kind if kind in counts else "other alert"] += 1
        if kind == "exact" and line["alerts"]:
            alerted_exact += 1
            for code in line["alerts"]:
                exact_alerts[code] = exact_alerts.get(code, 0) + 1
        if kind == "exact" and line.get("unnamed"):
            unnamed_exact += 1
            for text in line["unnamed"]:
                code = text.split("@")[0]
                unnamed_alerts[code] = unnamed_alerts.get(code, 0) + 1
        if line["shown"]:
            shown += 1
            shown_back += kind in ("exact", "recovered")
    return Tally(counts, exact_alerts, alerted_exact, unnamed_exact, unnamed_alerts, shown, shown_back)


def summary_row(protocol: str, style_name: str, lines: list[dict[str, Any]]) -> str:
    """Return the summary of one case's games (their per-game lines)."""
    t = tally(lines)
    counts = t.counts
    wrong_alert = sum(counts[c] for c in COLUMNS if c not in ("exact", "recovered", "wrong"))
    figures = (counts["exact"], counts["recovered"], wrong_alert, counts["wrong"], t.alerted_exact, t.unnamed_exact)
    by_alert = ", ".join(f"{c} {counts[c]}" for c in COLUMNS[2:-1] if counts[c]) or "none"
    named = ", ".join(f"{code} {n}" for code, n in sorted(t.exact_alerts.items())) or "none"
    unnamed = ", ".join(f"{code} {n}" for code, n in sorted(t.unnamed_alerts.items())) or "none"
    return (f"{protocol:10} {style_name:22} " + " ".join(f"{n:>14}" for n in figures) + f"   ({by_alert})"
            + f"   every position shown: {t.shown}, given back {t.shown_back}   alerts in exact: {named}"
            + f"   not the hands': {unnamed}")


def class_table(per_game: Path) -> str:
    """Return the Markdown table of the games not given back exactly in a per-game file: the first miss, its
    class, the plies about it (the one missed, the one before and after) whose positions the board never showed,
    and the hands' habits on those three plies."""
    rows = ["| board, hands | game | outcome | first miss (ply: what) | class | plies about it not shown | habits "
            "(ply: habits) |", "|---|---|---|---|---|---|---|"]
    counts: dict[tuple[str, str], int] = {}
    for text in per_game.read_text().splitlines():
        line = json.loads(text)
        if line["outcome"] == "exact":
            continue
        miss = line.get("miss")
        habits = "; ".join(f"{ply}: {', '.join(names)}" for ply, names in line.get("habits", {}).items()) or "-"
        rows.append(f"| {case_name(line['board'], line['hands'])} | {line['game']} | {line['outcome']} | "
                    f"{'-' if miss is None else f'{miss[0]}: {miss[1]}'} | {line['cls']} | "
                    f"{', '.join(str(n) for n in line.get('unshown') or []) or '-'} | {habits} |")
        key = (case_name(line["board"], line["hands"]), line["cls"])
        counts[key] = counts.get(key, 0) + 1
    totals = "; ".join(f"{case}: {cls} {n}" for (case, cls), n in sorted(counts.items()))
    return "\n".join(rows) + f"\n\nNot exact, by class: {totals or 'none'}\n"


def latency(protocol: str, plies: int, tmp: Path) -> list[float]:
    """Return placement -> MQTT move delays (ms) for the first ``plies`` of the Opera Game at real speed."""
    import paho.mqtt.client as mqtt

    game = read_game(DEFAULT_PGN)
    moves = list(game.mainline_moves())[:plies]
    events = piece_timeline(chess.Board(), moves, random.Random(7))
    path = timeline.write(tmp / f"{protocol}.jsonl", events)
    # the placement that completes each ply: the last change onto the ply's destination
    board = chess.Board()
    landing = []
    for move in moves:
        dest = move.to_square if not board.is_castling(move) else chess.square(
            6 if chess.square_file(move.to_square) > 4 else 2, chess.square_rank(move.from_square))
        board.push(move)
        landing.append(dest)
    place_times: list[int] = []
    k = 0
    for e in events:
        if k < len(landing) and isinstance(e, Change) and e.sq == landing[k] and e.piece is not None:
            later = [x for x in events if isinstance(x, Change) and x.t > e.t and x.sq == e.sq]
            if not later or later[0].t > e.t + 1000:
                place_times.append(e.t)
                k += 1
    received: dict[int, float] = {}
    with LocalBroker() as broker:
        conf = tmp / f"{protocol}.toml"
        conf.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\n[serial]\nrescan_s = 0.2\n'
                        f'boards = [{{ port = "{tmp}/ttyB*", protocol = "{protocol}" }}]\n'
                        f'[journal]\npath = "{tmp}/{protocol}.sqlite3"\n')
        daemon = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config", str(conf)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-{protocol}")

        def on_message(_c: object, _u: object, msg: mqtt.MQTTMessage) -> None:
            ev = json.loads(msg.payload)
            if ev.get("type") == "move" and ev["ply"] not in received:
                received[ev["ply"]] = time.monotonic()

        client.on_message = on_message
        client.connect("127.0.0.1", broker.port)
        client.subscribe(f"touchmove/boards/{BOARD_IDS[protocol]}/events", qos=1)
        client.loop_start()
        module = ["touchmove.sim.dgt"] if protocol == "dgt" else ["touchmove.sim.scanning", protocol]
        time.sleep(1.5)
        started = time.monotonic() + 1.0     # the timeline's 0, after the emulator has started
        board_proc = PtyBoard([sys.executable, "-m", *module, str(path), "--t0", repr(started)], str(tmp / "ttyB0"))
        board_proc.plug()
        board_proc.start()
        deadline = started + events[-1].t / 1000 + 15
        while len(received) < len(moves) and time.monotonic() < deadline:
            time.sleep(0.2)
        board_proc.stop()
        daemon.terminate()
        daemon.wait(10)
        client.loop_stop()
    return [(received[i + 1] - started) * 1000 - t for i, t in enumerate(place_times) if i + 1 in received]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--latency-plies", type=int, default=16)
    parser.add_argument("--boards", default=",".join(PROTOCOLS),
                        help="the board types of part 1, comma-separated (default: all three)")
    parser.add_argument("--hands", choices=("default", "fast", "harder", "both", "all", "none"), default="both",
                        help="the hands of part 1: default hands, fast replies, both (default), the harder hands, "
                             "all three, or none")
    parser.add_argument("--drops", action="store_true",
                        help="also the DGT link lost mid-game: 3 s and 20 s, with and without a power cycle")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--per-game", type=Path,
                        help="a file of one JSON line per game played (appended as games end; games found in it are "
                             "not played again)")
    parser.add_argument("--table", type=Path,
                        help="print the Markdown table of the games not given back exactly in this per-game file, "
                             "and nothing else")
    args = parser.parse_args()
    if args.table is not None:
        print(class_table(args.table), end="")
        return
    protocols = [p.strip() for p in args.boards.split(",") if p.strip()]
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown or not protocols:
        parser.error(f"--boards takes {', '.join(PROTOCOLS)}, not {', '.join(unknown) or 'nothing'}")
    styles = {"default": ["default hands"], "fast": ["fast replies"], "harder": ["harder hands"],
              "both": ["default hands", "fast replies"], "all": list(STYLES), "none": []}[args.hands]
    if not GAMES.is_dir():
        raise SystemExit(f"the shared games are not at {GAMES}")
    fig = Run("boards")
    games_given_back(args.games, protocols, styles, list(DROPS) if args.drops else None, args.per_game)
    if args.skip_latency:
        write_figures(fig, args.games, [])
        return
    print(f"part 2: placement -> MQTT move, real bridge and Mosquitto, {args.latency_plies} plies at real speed")
    latencies: list[tuple[str, list[float]]] = []
    for protocol in PROTOCOLS:
        with tempfile.TemporaryDirectory() as tmp:
            delays = latency(protocol, args.latency_plies, Path(tmp))
        if not delays:
            print(f"{protocol:10} no move received")
            continue
        delays.sort()
        p90 = delays[int(0.9 * (len(delays) - 1))]
        print(f"{protocol:10} median {statistics.median(delays):6.0f} ms   p90 {p90:6.0f} ms   "
              f"max {max(delays):6.0f} ms   ({len(delays)} plies)", flush=True)
        latencies.append((protocol, delays))
    write_figures(fig, args.games, latencies)


#: part 1's cases as played: (board and hands, the hands or "drops", each game's per-game line)
GIVEN_BACK: list[tuple[str, str, list[dict[str, Any]]]] = []

#: Where each kind of case writes its figures: the default and fast hands (with part 2's latencies) in
#: bench/figures/boards.json, the harder hands and the drops each in a file of their own, so that a run of one kind
#: keeps the last figures of the others.
FIGURES_OF = {"default hands": "boards", "fast replies": "boards", "harder hands": "boards_harder",
              "drops": "boards_drops"}


def case_figures(fig: Run, row: str, lines: list[dict[str, Any]]) -> None:
    """Add one case's figures: its games by how they end, the exact games with an alert, the games whose every
    position was shown, and the games not exact by class (:func:`miss_class`), naming the engine-class games."""
    t = tally(lines)
    for column in COLUMNS:
        fig.add(column, t.counts[column], group=row)
    fig.add("alerts in exact", t.alerted_exact, group=row)
    fig.add("alerts in exact, not the hands'", t.unnamed_exact, group=row)
    fig.add("every position shown", t.shown, group=row)
    missed = [line for line in lines if line["outcome"] != "exact" and "cls" in line]
    engine = [line["game"] for line in missed if line["cls"] == "engine"]
    fig.add("not exact: unrevealable", len(missed) - len(engine), group=row)
    fig.add("not exact: engine", len(engine), group=row)
    if engine:
        fig.note(f"{row}: the engine-class games (the reports showed the positions about the first miss): "
                 + ", ".join(str(n) for n in engine))


def part_of(fig: Run, bench: str) -> Run:
    """Return an empty run of ``bench`` measured as ``fig`` was (its start, commit and load)."""
    run = copy.copy(fig)
    run.bench, run.figures, run.notes = bench, [], []
    return run


def write_figures(fig: Run, games: int, latencies: list[tuple[str, list[float]]]) -> None:
    """Write part 1's counts (bench/figures/boards.json, boards_harder.json, boards_drops.json: the files of the
    cases played) and part 2's latencies (boards.json)."""
    runs: dict[str, Run] = {}
    for row, kind, lines in GIVEN_BACK:
        run = runs.setdefault(FIGURES_OF[kind], part_of(fig, FIGURES_OF[kind]))
        case_figures(run, row, lines)
    if latencies:
        run = runs.setdefault("boards", part_of(fig, "boards"))
        for protocol, delays in latencies:
            run.add("placement → MQTT move, median", round(statistics.median(delays)), "ms",
                    group=f"{protocol}, part 2")
            run.add("p90", round(delays[int(0.9 * (len(delays) - 1))]), "ms", group=f"{protocol}, part 2")
    for run in runs.values():
        run.note(f"part 1: {games} shared games per board type and hands (simulated clock)")
        run.write()


if __name__ == "__main__":
    main()
