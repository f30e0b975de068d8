"""Lost data: every shared game played by the modelled hands, with every record of a 0.5–8 s window mid-game lost
and the firmware's snapshot on reconnection (touchmove.sim.lost_data). Prints how many games come back exactly:

* by how many legal explanations the lost window has (the legal sequences of plies, shortest first, from the
  position the engine was sure of to the snapshot's occupancy; a move under way at the end included);
* ``illegal_move`` alerts raised (the hands play no illegal move: any is false);
* the time the engine takes per game, recovery included.

    python bench/lost_data.py [--games N] [--seed S] [--only I ...] [--show] [--window MIN MAX] [--blitz]

``--window MIN MAX`` sets the lost window (ms, default 500 8000); ``--blitz`` plays at blitz pace (0.3-2 s a move)
with windows of 2-8 s. Each window's recovery search is also timed alone (``touchmove.rules.recovery.search``
from the position the engine was sure of), by how many plies were really lost: the bar is every window with one
explanation recovered within 50 ms.

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

from figures import Run

from touchmove.rules import Alert, Engine
from touchmove.rules.recovery import search
from touchmove.sim.hands import Style, playable_moves, read_games
from touchmove.sim.lost_data import WINDOW_KINDS, WINDOW_MS, lost_game

#: The recovery bar: a window with one explanation is recovered within this (ms).
BAR_MS = 50.0
#: Blitz pace: how long a player thinks before a move (ms).
BLITZ_THINK_MS = (300, 2000)

GAMES_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "games"


def run(limit: int | None, seed: int, only: set[int] | None = None, show: bool = False,
        window_ms: tuple[int, int] = WINDOW_MS, style: Style | None = None, fig: Run | None = None) -> int:
    fig = fig or Run("lost_data")
    rows: Counter[tuple[str, bool]] = Counter()
    searches: dict[tuple[int, str], list[float]] = {}
    cpu: dict[int, list[float]] = {}
    #: per plies really lost: windows, back exactly; with one explanation, back exactly; searches that gave up
    by_plies: dict[int, Counter[str]] = {}
    gave_up_nodes: list[int] = []
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
            lost = lost_game(board, moves, random.Random(f"{seed}-{count}"), style, window_ms)
            recording, window, kind = lost.recording, lost.window, lost.kind
            if lost.sure is not None:
                s0, c0 = time.perf_counter(), time.process_time()
                result = search(lost.sure, window.occ)
                searches.setdefault((lost.lost_plies, kind), []).append((time.perf_counter() - s0) * 1000)
                cpu.setdefault(lost.lost_plies, []).append((time.process_time() - c0) * 1000)
                if result.gave_up and not result.ambiguous:
                    gave_up_nodes.append(result.nodes)
                by_plies.setdefault(lost.lost_plies, Counter())["gave up"] += result.gave_up
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
            if lost.sure is not None:
                tally = by_plies.setdefault(lost.lost_plies, Counter())
                tally["windows"] += 1
                tally["exact"] += exact
                tally["one"] += kind == "one explanation"
                tally["one exact"] += exact and kind == "one explanation"
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
    pace = "" if style is None else f", {style.think_ms[0] / 1000:g}-{style.think_ms[1] / 1000:g} s a move"
    print(f"{played} games, one lost window each ({window_ms[0] / 1000:g}-{window_ms[1] / 1000:g} s mid-game, "
          f"then a snapshot{pace})")
    exact_all = sum(n for (_, exact), n in rows.items() if exact)
    for kind in WINDOW_KINDS:
        total = rows[(kind, True)] + rows[(kind, False)]
        if total:
            print(f"  {kind:<22} {total:>5} games, {rows[(kind, True)]:>5} back exactly "
                  f"({100 * rows[(kind, True)] / total:5.1f} %)")
    print(f"  all                    {played:>5} games, {exact_all:>5} back exactly "
          f"({100 * exact_all / max(played, 1):5.1f} %)")
    for kind in WINDOW_KINDS:
        if rows[(kind, True)] + rows[(kind, False)]:
            fig.add("games", rows[(kind, True)] + rows[(kind, False)], group=kind)
            fig.add("back exactly", rows[(kind, True)], group=kind)
    fig.add("games", played, group="all")
    fig.add("back exactly", exact_all, group="all")
    fig.add("`illegal_move` alerts", illegal, group="all")
    fig.add("`changes_lost` alerts", lost_alerts, group="all")
    fig.add("engine time per game, median", round(statistics.median(times) * 1000, 1), "ms", group="all")
    print(f"  illegal_move alerts: {illegal}; changes_lost alerts: {lost_alerts}")
    print(f"  engine time per game: median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")
    print(f"  recovery search alone, by plies really lost (wall clock; the bar: one explanation within {BAR_MS:g} ms)")
    for plies in sorted({p for p, _ in searches}):
        one = searches.get((plies, "one explanation"), [])
        every = [ms for (p, _), values in searches.items() if p == plies for ms in values]
        gave = len(searches.get((plies, "search gave up"), []))
        line = (f"    {plies} plies: {len(every):>4} windows, median {statistics.median(every):6.1f} ms, "
                f"max {max(every):7.1f} ms")
        if one:
            line += (f"; one explanation {len(one):>4}, within the bar {sum(ms <= BAR_MS for ms in one):>4}, "
                     f"max {max(one):6.1f} ms")
        print(line + (f"; gave up {gave}" if gave else ""))
    if gave_up_nodes:
        print(f"  of which at the position bound (not too many explanations): {len(gave_up_nodes)}")
    print("  by plies really lost: windows, back exactly; one explanation, back exactly; search gave up; search "
          "p50 / p99 / max ms wall clock (CPU)")
    for plies in sorted(by_plies):
        tally, every, used = by_plies[plies], sorted(searches_of(searches, plies)), sorted(cpu.get(plies, []))
        print(f"    {plies} plies: {tally['windows']:>4} windows, {tally['exact']:>4} exact; one explanation "
              f"{tally['one']:>4}, {tally['one exact']:>4} exact; gave up {tally['gave up']:>3}; "
              f"{quantile(every, 0.5):6.1f} / {quantile(every, 0.99):6.1f} / {every[-1]:6.1f} ms "
              f"({quantile(used, 0.5):.1f} / {quantile(used, 0.99):.1f} / {used[-1]:.1f})")
        row = f"{plies} plies really lost"
        fig.add("windows", tally["windows"], group=row)
        fig.add("back exactly", tally["exact"], group=row)
        fig.add("one explanation", tally["one"], group=row)
        fig.add("one explanation, back exactly", tally["one exact"], group=row)
        fig.add("search gave up", tally["gave up"], group=row)
        fig.add("search p50 (CPU)", round(quantile(used, 0.5), 1), "ms", group=row)
        fig.add("search p99 (CPU)", round(quantile(used, 0.99), 1), "ms", group=row)
    fig.write()
    return 0


def searches_of(searches: dict[tuple[int, str], list[float]], plies: int) -> list[float]:
    """Return every search time of windows with ``plies`` plies really lost."""
    return [ms for (p, _), values in searches.items() if p == plies for ms in values]


def quantile(values: list[float], q: float) -> float:
    """Return the ``q`` quantile of sorted ``values`` (the nearest rank)."""
    return values[min(len(values) - 1, int(q * len(values)))]


def sweep(limit: int | None, seed: int, fig: Run | None = None) -> int:
    """Lose exactly 1 to 8 real plies of each game at a random point (no hands: the snapshot at rest) and time the
    search alone: the figures of the recovery bar for every window length."""
    rng = random.Random(seed)
    rows: dict[int, dict[str, list[float]]] = {}
    count = 0
    for path in sorted(GAMES_DIR.glob("*.pgn")):
        for game in read_games(str(path)):
            moves = playable_moves(game)
            if moves is None or len(moves) < 20:
                continue
            for plies in range(1, 9):
                at = rng.randrange(4, len(moves) - plies)
                board = game.board()
                for move in moves[:at]:
                    board.push(move)
                sure = board.copy(stack=False)
                for move in moves[at:at + plies]:
                    board.push(move)
                s0 = time.perf_counter()
                result = search(sure, board.occupied)
                ms = (time.perf_counter() - s0) * 1000
                if result.gave_up:
                    kind = "ambiguous" if result.ambiguous else "gave up"
                elif not result.found:
                    kind = "none"
                elif len({e.board.epd() for e in result.found}) == 1:     # orders of the same plies aside
                    kind = "one" if result.found[0].board.epd() == board.epd() else "one, other"
                else:
                    kind = "several"
                rows.setdefault(plies, {}).setdefault(kind, []).append(ms)
            count += 1
            if limit is not None and count >= limit:
                break
        if limit is not None and count >= limit:
            break
    fig = fig or Run("lost_data_plies")
    print(f"{count} games, 1 to 8 real plies lost at a random point each (the search alone, wall clock)")
    for plies, kinds in sorted(rows.items()):
        every = [ms for values in kinds.values() for ms in values]
        one = kinds.get("one", [])
        parts = [f"{kind} {len(values)}" for kind, values in sorted(kinds.items())]
        every.sort()
        line = (f"  {plies} plies: median {statistics.median(every):6.1f} ms, p99 {quantile(every, 0.99):7.1f} ms, "
                f"max {max(every):7.1f} ms; "
                + ", ".join(parts))
        if one:
            line += (f"; one explanation within {BAR_MS:g} ms: {sum(ms <= BAR_MS for ms in one)}/{len(one)} "
                     f"(max {max(one):.1f} ms)")
        print(line)
        row = f"{plies} plies lost"
        fig.add("windows", len(every), group=row)
        fig.add("median", round(statistics.median(every), 1), "ms", group=row)
        fig.add("p99", round(quantile(every, 0.99), 1), "ms", group=row)
        fig.add("max", round(max(every), 1), "ms", group=row)
        fig.add("one explanation", len(one), group=row)
        fig.add(f"one explanation within {BAR_MS:g} ms", sum(ms <= BAR_MS for ms in one), group=row)
    fig.write()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=None, help="how many games (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", type=int, nargs="+", metavar="I", help="replay only these game indexes")
    parser.add_argument("--show", action="store_true", help="print every game that fails the bar")
    parser.add_argument("--window", type=int, nargs=2, metavar=("MIN", "MAX"), default=None,
                        help="lost window in ms (default 500 8000; 2000 8000 with --blitz)")
    parser.add_argument("--blitz", action="store_true", help="blitz pace (0.3-2 s a move), windows of 2-8 s")
    parser.add_argument("--plies", action="store_true", help="lose exactly 1 to 8 real plies; time the search")
    args = parser.parse_args()
    window = tuple(args.window) if args.window else ((2000, 8000) if args.blitz else WINDOW_MS)
    if not 0 < window[0] <= window[1] <= 60_000:
        print("--window: give MIN <= MAX, in ms, at most 60000", file=sys.stderr)
        return 2
    style = Style(think_ms=BLITZ_THINK_MS) if args.blitz else None
    name = "lost_data" + ("_plies" if args.plies else "_blitz" if args.blitz else "")
    fig = Run(name)
    if args.plies:
        return sweep(args.games, args.seed, fig)
    if not GAMES_DIR.is_dir():
        print(f"no games at {GAMES_DIR}: clone the project beside ../shared", file=sys.stderr)
        return 2
    return run(args.games, args.seed, set(args.only) if args.only else None, args.show,
               (window[0], window[1]), style, fig)


if __name__ == "__main__":
    sys.exit(main())
