"""How many shared games come back exactly from each of the harder hands (``touchmove.sim.hands.HARDER_HANDS``).

Every game of ../shared/data/games is played alone on a board by each kind of hands (a seed per game and kind),
replayed through the engine, and compared move by move with the game. Printed per kind: games exact, games lost
(first difference shown for a few), and games with a ``board_mismatch`` or an ``illegal_move`` alert although
the hands played only legal moves (a mismatch is honest while a knocked piece is off the board for over a second;
an illegal move never is).

    python bench/hand_styles.py [--games N] [--every K] [--style NAME] [--show N]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import chess
from figures import Run

from touchmove.rules import Engine
from touchmove.rules.events import Alert
from touchmove.sim.hands import HARDER_HANDS, Hands, Style, play, playable_moves, read_games

GAMES_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "games"

Game = tuple[str, chess.Board, list[chess.Move]]


def shared_games() -> list[Game]:
    out = []
    for path in sorted(GAMES_DIR.glob("*.pgn")):
        for index, game in enumerate(read_games(str(path)), start=1):
            moves = playable_moves(game)
            if moves is not None:
                out.append((f"{path.stem}#{index}", game.board(), moves))
    return out


def replay_game(game: Game, style: Style, seed: str) -> tuple[int | None, set[str]]:
    """Return the first ply that differs (None: exact) and the codes of the false alarms raised."""
    _, board, moves = game
    hands = Hands(random.Random(seed), style)
    play(board, moves, hands)
    engine = Engine(fen=board.fen(), chess960=board.chess960, settle_ms=style.settle_ms)
    alarms: set[str] = set()
    for record in hands.records:
        for event in engine.feed(record):
            if isinstance(event, Alert) and event.code in ("board_mismatch", "illegal_move"):
                alarms.add(event.code)
    engine.finish()
    got = engine.games[0].moves if engine.games else []
    if got == moves and len(engine.games) == 1:
        return None, alarms
    return next((i + 1 for i, (a, b) in enumerate(zip(got, moves, strict=False)) if a != b),
                min(len(got), len(moves)) + 1), alarms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=None, help="only the first N games")
    parser.add_argument("--every", type=int, default=1, help="every K-th game only")
    parser.add_argument("--style", action="append", choices=list(HARDER_HANDS), help="only these kinds")
    parser.add_argument("--show", type=int, default=3, help="lost games named per kind")
    args = parser.parse_args()
    if not GAMES_DIR.is_dir():
        print(f"no games at {GAMES_DIR}: clone the project beside ../shared", file=sys.stderr)
        return 2
    fig = Run("hand_styles")
    games = shared_games()[:args.games][::args.every]
    print(f"{len(games)} games ({sum(b.chess960 for _, b, _ in games)} Chess960)")
    lost_any = False
    for name in args.style or HARDER_HANDS:
        style = HARDER_HANDS[name]
        start = time.monotonic()
        lost: list[tuple[str, int]] = []
        mismatched = illegal = 0
        for game in games:
            differ, alarms = replay_game(game, style, f"{name}-{game[0]}")
            if differ is not None:
                lost.append((game[0], differ))
            mismatched += "board_mismatch" in alarms
            illegal += "illegal_move" in alarms
        lost_any |= bool(lost)
        shown = ", ".join(f"{g} ply {p}" for g, p in lost[:args.show])
        print(f"{name:28} exact {len(games) - len(lost):>5} of {len(games)}  lost {len(lost):>3}"
              f"  board_mismatch in {mismatched:>3}  illegal_move in {illegal:>3}  ({time.monotonic() - start:.0f} s)"
              f"{'  ' + shown if shown else ''}",
              flush=True)
        fig.add("games", len(games), group=name)
        fig.add("exact", len(games) - len(lost), group=name)
        fig.add("`board_mismatch` in", mismatched, group=name)
        fig.add("`illegal_move` in", illegal, group=name)
    fig.write()
    return 1 if lost_any else 0


if __name__ == "__main__":
    sys.exit(main())
