"""The broadcaster's own cost per move, in process: a move event and its clock event handled, then the round
PGN rendered, at 200 boards of 40 plies (random legal games). Prints figures; not a test.

    .venv/bin/python bench/broadcast_round_pgn.py            # 200 boards, 3,000 moves, 3 runs
    .venv/bin/python bench/broadcast_round_pgn.py --boards 500 --moves 5000
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import chess
from figures import Run

from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.tournament import parse_tournament


def tournament(boards: int, out: Path) -> Broadcaster:
    pairings = [{"board": n, "board_id": f"b{n:03d}", "white": f"White {n}", "black": f"Black {n}"}
                for n in range(1, boards + 1)]
    data = {"event": "bench", "round": 1, "broadcast": {"output_dir": str(out)},
            "rounds": [{"number": 1, "date": "2026-11-29", "boards": pairings}]}
    return Broadcaster(parse_tournament(data), output_dir=out).open()


def run(boards: int, moves: int, opening: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        hub = tournament(boards, Path(tmp))
        games = {f"b{n:03d}": chess.Board() for n in range(1, boards + 1)}

        def send(board_id: str, event: dict[str, object]) -> None:
            hub.handle(BridgeMessage("touchmove", board_id, "events", event))

        def move(board_id: str) -> None:
            board = games[board_id]
            if board.is_game_over():
                return
            m = rng.choice(list(board.legal_moves))
            board.push(m)
            send(board_id, {"type": "move", "game": 1, "ply": board.ply(), "uci": m.uci()})
            send(board_id, {"type": "clock", "game": 1, "ply": board.ply(), "remaining": 600_000 - board.ply()})

        for board_id in games:
            send(board_id, {"type": "game_start", "game": 1, "fen": chess.STARTING_FEN})
        for _ in range(opening):
            for board_id in games:
                move(board_id)
        hub.outputs.round_pgn()
        ids = list(games)
        times = []
        for _ in range(moves):
            start = time.perf_counter()
            move(rng.choice(ids))
            hub.outputs.round_pgn()
            times.append(time.perf_counter() - start)
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=200)
    parser.add_argument("--moves", type=int, default=3000)
    parser.add_argument("--opening", type=int, default=40, help="plies played on every board first")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    fig = Run("broadcast_round_pgn")
    medians = []
    for i in range(args.runs):
        times = run(args.boards, args.moves, args.opening, seed=i)
        medians.append(statistics.median(times) * 1000)
        p99 = sorted(times)[int(len(times) * 0.99)] * 1000
        print(f"run {i + 1}: per move (handle + round PGN) median {medians[-1]:.3f} ms, p99 {p99:.3f} ms")
        fig.add("median", round(medians[-1], 3), "ms", group=f"run {i + 1}")
        fig.add("p99", round(p99, 3), "ms", group=f"run {i + 1}")
    print(f"{args.boards} boards: median of the runs' medians {statistics.median(medians):.3f} ms per move")
    fig.add("median", round(statistics.median(medians), 3), "ms", group=f"median of {args.runs} runs")
    fig.note(f"{args.boards} boards of {args.opening} plies, {args.moves} moves a run: a move and its clock event "
             "handled, then the round PGN rendered")
    fig.write()


if __name__ == "__main__":
    main()
