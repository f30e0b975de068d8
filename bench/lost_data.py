"""Lost data: every shared game played by the modelled hands, with every record of a 0.5–8 s window mid-game lost
and the firmware's snapshot on reconnection (touchmove.lost_data). Prints how many games come back exactly:

* by how many legal explanations the lost window has (the legal sequences of plies, shortest first, from the
  position the engine was sure of to the snapshot's occupancy; a move under way at the end included);
* ``illegal_move`` alerts raised (the hands play no illegal move: any is false);
* the time the engine takes per game, recovery included.

    python bench/lost_data.py [--games N] [--seed S] [--only I ...] [--show]

``--show`` prints every game that fails the bar (a window with one explanation not back exactly, or any
``illegal_move``) with its index; ``--only`` replays just those indexes (as numbered in a full run).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from touchmove.hands import playable_moves, read_games
from touchmove.lost_data import WINDOW_KINDS, lost_game
from touchmove.rules import Alert, Engine

GAMES_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "games"


def run(limit: int | None, seed: int, only: set[int] | None = None, show: bool = False) -> int:
    rows: Counter[tuple[str, bool]] = Counter()
    illegal = 0
    lost_alerts = 0
    times: list[float] = []
    count = 0
    for path in sorted(GAMES_DIR.glob("*.pgn")):
        for game in read_games(str(path)):
            moves = playable_moves(game)
            if moves is None:
                continue
            if only is not None and count not in only:
                count += 1
                continue
            board = game.board()
            lost = lost_game(board, moves, random.Random(f"{seed}-{count}"))
            recording, window, kind = lost.recording, lost.window, lost.kind
            engine = Engine(fen=board.fen(), chess960=board.chess960)
            t0 = time.process_time()
            events = []
            for record in recording:
                events += engine.feed(record)
            events += engine.finish()
            times.append(time.process_time() - t0)
            alerts = [e for e in events if isinstance(e, Alert)]
            raised = sum(a.code == "illegal_move" for a in alerts)
            illegal += raised
            lost_alerts += sum(a.code == "changes_lost" for a in alerts)
            exact = engine.games[0].moves == moves if engine.games else False
            rows[(kind, exact)] += 1
            if show and (raised or (kind == "one explanation" and not exact)):
                players = f"{game.headers.get('White', '?')}-{game.headers.get('Black', '?')}"
                print(f"  game {count} ({path.name}, {players}):"
                      f" {kind}, {'exact' if exact else 'not exact'}, {raised} illegal_move; lost"
                      f" {window.start}-{window.end} ms ({window.dropped} records)", flush=True)
            count += 1
            if limit is not None and count >= limit:
                break
        if limit is not None and count >= limit:
            break
    played = sum(rows.values())
    print(f"{played} games, one lost window each (0.5-8 s mid-game, then a snapshot)")
    exact_all = sum(n for (_, exact), n in rows.items() if exact)
    for kind in WINDOW_KINDS:
        total = rows[(kind, True)] + rows[(kind, False)]
        if total:
            print(f"  {kind:<22} {total:>5} games, {rows[(kind, True)]:>5} back exactly "
                  f"({100 * rows[(kind, True)] / total:5.1f} %)")
    print(f"  all                    {played:>5} games, {exact_all:>5} back exactly "
          f"({100 * exact_all / max(played, 1):5.1f} %)")
    print(f"  illegal_move alerts: {illegal}; changes_lost alerts: {lost_alerts}")
    print(f"  engine time per game: median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=None, help="how many games (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", type=int, nargs="+", metavar="I", help="replay only these game indexes")
    parser.add_argument("--show", action="store_true", help="print every game that fails the bar")
    args = parser.parse_args()
    if not GAMES_DIR.is_dir():
        print(f"no games at {GAMES_DIR}: clone the project beside ../shared", file=sys.stderr)
        return 2
    return run(args.games, args.seed, set(args.only) if args.only else None, args.show)


if __name__ == "__main__":
    sys.exit(main())
