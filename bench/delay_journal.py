"""How long a restarted broadcaster takes to read back a delayed round's journal (``round-<n>-delay.jsonl``).

Prints figures; not a test. Writes the journal as a broadcaster keeps it during a delayed round (every board's
game of random legal moves, each ply a change for the move and one for its clock time), then times reading it
back (what ``Broadcaster.open`` does after ``kill -9``) and rewriting it with what the delay still needs.

    .venv/bin/python bench/delay_journal.py --boards 20 --plies 120
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import chess
from figures import Run

from touchmove.broadcast.delay_journal import DelayJournal
from touchmove.broadcast.live_pgn import GameSnapshot, PlyRecord
from touchmove.clocks import ManualClock


def write(path: Path, clock: ManualClock, boards: int, plies: int, seed: int) -> int:
    """Write the journal; return the number of changes."""
    rng = random.Random(seed)
    journal = DelayJournal(path, clock)
    journal.rewrite({})
    positions = {b: chess.Board() for b in range(1, boards + 1)}
    moves: dict[int, list[PlyRecord]] = {b: [] for b in positions}
    changes = 0
    for ply in range(plies):
        for b, board in positions.items():
            if board.is_game_over():
                continue
            move = rng.choice(list(board.legal_moves))
            san = board.san(move)
            board.push(move)
            for clock_ms in (None, 600_000 - ply * 1000):  # the move, then its clock time
                rec = PlyRecord(move.uci(), san, clock_ms)
                moves[b][len(board.move_stack) - 1:] = [rec]
                journal.append(b, clock.monotonic(), (GameSnapshot(chess.STARTING_FEN, False, 1, tuple(moves[b]),
                                                                   "*", None, None),))
                changes += 1
            clock.advance(0.05)
    journal.close()
    return changes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=20)
    parser.add_argument("--plies", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    fig = Run("delay_journal")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "round-1-delay.jsonl"
        clock = ManualClock()
        changes = write(path, clock, args.boards, args.plies, args.seed)
        size = path.stat().st_size
        journal = DelayJournal(path, clock)
        start = time.perf_counter()
        lines = journal.load(900.0)
        read_s = time.perf_counter() - start
        start = time.perf_counter()
        journal.rewrite(lines)
        rewrite_s = time.perf_counter() - start
        journal.close()
        kept = sum(len(entries[-1][1][0].moves) for entries in lines.values())
        print(f"{args.boards} boards, {changes} changes ({kept} plies), {size / 1e6:.2f} MB: "
              f"read back in {read_s:.2f} s, rewritten in {rewrite_s:.2f} s")
    fig.add("boards", args.boards)
    fig.add("changes", changes)
    fig.add("plies kept", kept)
    fig.add("journal", round(size / 1e6, 2), "MB")
    fig.add("read back", round(read_s, 2), "s")
    fig.add("rewritten", round(rewrite_s, 2), "s")
    fig.write()


if __name__ == "__main__":
    main()
