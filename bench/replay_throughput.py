"""Replay throughput of the rules engine on recordings of the real games in ../shared/data/games.

Each game is played by the modelled hands (touchmove.sim.hands: captures in varied orders, slides, bounces, chatter,
clock presses) into a recording; the recordings are made first and not timed. Then, on one core:

* engine: parsed records through ``Engine.feed`` (records/s and µs per record);
* replay: JSON lines through ``touchmove.replay.replay`` (parsing included), as ``touchmove replay --pgn`` does;
* jsonl: the same, with every event written as a JSON line, as ``touchmove replay --jsonl`` does;
* both again with the firmware's heartbeat (one occupancy report a second) woven in, as a real capture has it;
* and with the games' own thinking times (from their ``[%clk]`` comments, else the hands' own) and heartbeats:
  what a board at those games' pace would really send.

Figures are medians of several runs of CPU time (the machine is shared); every game must come back exactly.

    python bench/replay_throughput.py [--games N] [--runs R]

For an instruction count a loaded machine cannot disturb (docs/changelog.md), ``--feed engine`` makes the
recordings of ``--games N`` (square changes only) and feeds them once to the engine, ``--feed none`` makes them
only; the engine's instructions are the difference of the two runs under
``valgrind --tool=cachegrind --cache-sim=no``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import chess
from figures import Run

from touchmove import records
from touchmove.replay import replay
from touchmove.rules import Engine
from touchmove.sim.hands import Hands, Style, game_timing, play, playable_moves, read_games, with_heartbeats

GAMES_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "games"


Recordings = list[tuple[chess.Board, list[chess.Move], list[records.Record]]]


def recordings(limit: int | None) -> tuple[Recordings, Recordings]:
    """Return the recordings with the hands' thinking times, and with the games' own (both without heartbeats)."""
    quick: Recordings = []
    paced: Recordings = []
    for path in sorted(GAMES_DIR.glob("*.pgn")):
        for game in read_games(str(path)):
            moves = playable_moves(game)
            if moves is None:
                continue
            board = game.board()
            hands = Hands(random.Random(len(quick)), Style())
            play(board, moves, hands)
            quick.append((board, moves, hands.records))
            clocks, thinks = game_timing(game)
            hands = Hands(random.Random(len(quick)), Style())
            play(board, moves, hands, clocks, thinks)
            paced.append((board, moves, hands.records))
            if limit is not None and len(quick) >= limit:
                return quick, paced
    return quick, paced


def run_engine(games: list[tuple[chess.Board, list[chess.Move], list[records.Record]]]) -> float:
    start = time.process_time()
    for board, moves, recs in games:
        engine = Engine(fen=board.fen(), chess960=board.chess960)
        for record in recs:
            engine.feed(record)
        engine.finish()
        if engine.games[0].moves != moves:
            sys.exit(f"a game did not come back: {board.fen()}")
    return time.process_time() - start


def run_replay(games: list[tuple[chess.Board, list[str]]], write: bool = False) -> float:
    start = time.process_time()
    for board, lines in games:
        events = replay(lines, Engine(fen=board.fen(), chess960=board.chess960))
        if write:
            # As `touchmove replay --jsonl` does, without the terminal: every event as a JSON line.
            for event in events:
                event.to_json()
        else:
            for _ in events:
                pass
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=None, help="how many games (default: all)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--feed", choices=("engine", "none"), default=None,
                        help="only make the recordings and feed them once to the engine (or not): for cachegrind")
    args = parser.parse_args()
    if not GAMES_DIR.is_dir():
        print(f"no games at {GAMES_DIR}: clone the project beside ../shared", file=sys.stderr)
        return 2
    if args.feed is not None:
        games, _ = recordings(args.games)
        if args.feed == "engine":
            run_engine(games)
        print(f"{len(games)} games, {sum(len(r) for _, _, r in games)} records, fed to: {args.feed}")
        return 0
    fig = Run("replay_throughput")
    print("making recordings (not timed)...", flush=True)
    games, paced = recordings(args.games)
    beating = [(b, m, with_heartbeats(r, b.occupied)) for b, m, r in games]
    paced_beating = [(b, m, with_heartbeats(r, b.occupied)) for b, m, r in paced]
    plies = sum(len(m) for _, m, _ in games)
    for label, data in (("changes only", games), ("with heartbeats", beating),
                        ("the games' own pace, with heartbeats", paced_beating)):
        count = sum(len(r) for _, _, r in data)
        lines = [(b, [records.to_line(x) for x in r]) for b, _, r in data]
        engine_s = statistics.median(run_engine(data) for _ in range(args.runs))
        replay_s = statistics.median(run_replay(lines) for _ in range(args.runs))
        jsonl_s = statistics.median(run_replay(lines, write=True) for _ in range(args.runs))
        print(f"\n{label}: {len(data)} games, {plies} plies, {count} records ({count / plies:.1f} a ply)")
        print(f"  engine  {count / engine_s:>9,.0f} records/s  {engine_s / count * 1e6:6.1f} µs/record"
              f"  {engine_s / plies * 1e6:6.1f} µs/ply")
        print(f"  replay  {count / replay_s:>9,.0f} records/s  {replay_s / count * 1e6:6.1f} µs/record"
              "  (JSON lines read)")
        print(f"  jsonl   {count / jsonl_s:>9,.0f} records/s  {jsonl_s / count * 1e6:6.1f} µs/record"
              "  (JSON lines read, every event written as a JSON line)")
        fig.add("games", len(data), group=label)
        fig.add("records", count, group=label)
        fig.add("engine", round(count / engine_s), "records/s", group=label)
        fig.add("engine per record", round(engine_s / count * 1e6, 1), "µs", group=label)
        fig.add("`replay --pgn`", round(count / replay_s), "records/s", group=label)
        fig.add("`replay --jsonl`", round(count / jsonl_s), "records/s", group=label)
    fig.note(f"CPU time on one core, median of {args.runs} runs; every game came back exactly")
    fig.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
