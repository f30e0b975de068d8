"""Vendor boards (DGT, Millennium ChessLink, Chessnut): games given back, and placement -> MQTT move latency.

Part 1, per board type, over the shared games (../shared/data/games) played by the hand model through the
board's emulator and translator on a simulated clock (touchmove.sim.harness: the protocol path of ``touchmove
run`` without the pty), once with the default hands and once with fast replies (bullet: an answer 60-120 ms after
the move it answers, within one DGT scan). The engine's settle time is the bridge's for that board: 300 ms for
DGT boards, 200 for the others. A game is *exact* when the engine's moves are the game's, *recovered* when
they are but some came from the lost-changes search (a ``changes_lost`` alert: the scans mixed plies and the
pieces shown told which); else it ends on ``changes_lost`` (the only alert), ``board_mismatch``,
``illegal_move`` or another alert, or is *wrong* without an alert (the figure that must stay 0). The last
figures count the games whose every position the board's reports showed, in order (no ply hidden in a scan with
the next), and how many of them came back: all must.

Part 2, per board type: the emulator on a pty at real speed, the real bridge (``touchmove run``) and a private
Mosquitto; the time from a piece's placement on the emulated board to the ``move`` event on MQTT (median, p90,
max over the plies of the first moves of the Opera Game).

    .venv/bin/python bench/boards.py [--games N] [--boards dgt,chesslink,chessnut]
                                     [--hands default|fast|harder|both|all|none] [--drops]
                                     [--latency-plies N] [--skip-latency]

The harder hands are touchmove's own boards' harder hands all at once (``HARDER_HANDS["all at once"]``: adjustments
out of turn, knocked pieces put back, slides, bullet replies, pushed-aside captures). ``--drops`` adds the DGT link
lost mid-game with the port kept open (3 s and 20 s, the board switched off and on during the first second or
not; touchmove.sim.dgt.Drop), with the default hands.
"""

from __future__ import annotations

import argparse
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

import chess
import chess.pgn
from figures import Run

from touchmove.records import Lift, Place, Snapshot
from touchmove.rules import Engine
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


def replay(start: chess.Board, records: list[object], settle_ms: int = 200) -> tuple[list[str], list[str]]:
    """Return the moves the engine publishes (amendments and takebacks applied) and its alert codes."""
    fen = None if start.fen() == chess.STARTING_FEN else start.fen()
    eng = Engine(fen=fen, chess960=start.chess960, settle_ms=settle_ms)
    events = [e for r in records for e in eng.feed(r)] + eng.finish()  # type: ignore[arg-type]
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


def every_position_shown(start: chess.Board, moves: list[chess.Move], records: Sequence[object]) -> bool:
    """Return whether the board's reports showed the pieces of every position of the game, in order (then its
    moves are plain to read; else some ply was never shown whole: two plies in one scan, or changes lost)."""
    state = {sq: p.symbol() for sq, p in start.piece_map().items()}
    shown: list[frozenset[tuple[int, str]]] = []
    for record in records:
        if isinstance(record, Lift):
            state.pop(record.sq, None)
        elif isinstance(record, Place) and record.piece is not None:
            state[record.sq] = record.piece
        elif isinstance(record, Snapshot) and record.pieces is not None:
            state = {sq: p.symbol() for sq, p in chess.BaseBoard(record.pieces).piece_map().items()}
        else:
            continue
        now = frozenset(state.items())
        if not shown or shown[-1] != now:
            shown.append(now)
    board, at = start.copy(stack=False), 0
    for move in moves:
        board.push(move)
        want = frozenset((sq, p.symbol()) for sq, p in board.piece_map().items())
        while at < len(shown) and shown[at] != want:
            at += 1
        if at == len(shown):
            return False
    return True


def drop_of(events: Sequence[object], i: int, length: int, power: bool) -> Drop:
    """Return game ``i``'s drop: starting a quarter to a half of the way through its timeline."""
    end = max(getattr(e, "t", 0) for e in events)
    return Drop(random.Random(100 + i).randint(end // 4, end // 2), length, power)


def games_given_back(limit: int, protocols: list[str], styles: list[str], drops: list[str] | None = None) -> None:
    games = load(limit)
    print(f"part 1: {len(games)} shared games per board type and hands (simulated clock); 'alerts in exact': the "
          "exact games with an alert, and the alerts they had by code")
    print(f"{'board':10} {'hands':22} " + " ".join(f"{c:>14}" for c in COLUMNS))
    cases = [(protocol, name, None) for protocol in protocols for name in styles]
    cases += [("dgt", name, DROPS[name]) for name in drops or []]
    for protocol, style_name, drop in cases:
        style = STYLES.get(style_name, STYLES["default hands"])
        counts = dict.fromkeys(COLUMNS, 0)
        shown = shown_back = 0
        alerted_exact = 0
        exact_alerts: dict[str, int] = {}
        t0 = time.monotonic()
        for i, (start, moves) in enumerate(games):
            events = piece_timeline(start, moves, random.Random(i), style)
            options = {"drops": (drop_of(events, i, *drop),)} if drop else {}
            run = harness.run(protocol, start, events, seed=i, **options)
            assert run.translator is not None
            got, alerts = replay(start, run.records, max(200, run.translator.min_settle_ms))
            kind = outcome(got, [m.uci() for m in moves], alerts)
            counts[kind if kind in counts else "other alert"] += 1
            if kind == "exact" and alerts:
                alerted_exact += 1
                for code in alerts:
                    exact_alerts[code] = exact_alerts.get(code, 0) + 1
            if every_position_shown(start, moves, run.records):
                shown += 1
                shown_back += kind in ("exact", "recovered")
        named = ", ".join(f"{code} {n}" for code, n in sorted(exact_alerts.items())) or "none"
        print(f"{protocol:10} {style_name:22} " + " ".join(f"{counts[c]:>14}" for c in COLUMNS)
              + f"   every position shown: {shown}, given back {shown_back}"
              + f"   alerts in exact: {alerted_exact} ({named})"
              + f"   ({time.monotonic() - t0:.0f} s)", flush=True)
        GIVEN_BACK.append((f"{protocol}, {style_name}", counts, shown))


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
    args = parser.parse_args()
    protocols = [p.strip() for p in args.boards.split(",") if p.strip()]
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown or not protocols:
        parser.error(f"--boards takes {', '.join(PROTOCOLS)}, not {', '.join(unknown) or 'nothing'}")
    styles = {"default": ["default hands"], "fast": ["fast replies"], "harder": ["harder hands"],
              "both": ["default hands", "fast replies"], "all": list(STYLES), "none": []}[args.hands]
    if not GAMES.is_dir():
        raise SystemExit(f"the shared games are not at {GAMES}")
    fig = Run("boards")
    games_given_back(args.games, protocols, styles, list(DROPS) if args.drops else None)
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


#: part 1's rows as printed: (board and hands, counts by how a game ends, games whose positions were all shown)
GIVEN_BACK: list[tuple[str, dict[str, int], int]] = []


def write_figures(fig: Run, games: int, latencies: list[tuple[str, list[float]]]) -> None:
    """Write part 1's counts and part 2's latencies (bench/figures/boards.json)."""
    for row, counts, shown in GIVEN_BACK:
        for column in COLUMNS:
            fig.add(column, counts[column], group=row)
        fig.add("every position shown", shown, group=row)
    for protocol, delays in latencies:
        fig.add("placement → MQTT move, median", round(statistics.median(delays)), "ms", group=f"{protocol}, part 2")
        fig.add("p90", round(delays[int(0.9 * (len(delays) - 1))]), "ms", group=f"{protocol}, part 2")
    fig.note(f"part 1: {games} shared games per board type and hands (simulated clock)")
    fig.write()


if __name__ == "__main__":
    main()
