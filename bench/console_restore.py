"""How long a restarted broadcaster takes to read back the console's events of a round.

Prints figures; not a test. Writes ``round-1-console.jsonl`` as the broadcaster keeps it (every board's game
of random legal moves, each ply a binding touch, the move and the clock press, one alert per board), then
times ``Broadcaster(...).open()`` reading it: the touch timelines, alerts and claim windows as before the restart.

    .venv/bin/python bench/console_restore.py --boards 200 --plies 100
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import chess
from figures import Run

from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.tournament import parse_tournament


def archive_lines(boards: int, plies: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for number in range(1, boards + 1):
        seq = 0

        def add(number: int = number, **event: Any) -> None:
            nonlocal seq
            seq += 1
            lines.append(json.dumps({"board": number, "event": {**event, "seq": seq, "session": "s1",
                                                                "ts": "2026-12-01T10:00:00.000Z"}},
                                    separators=(",", ":")))

        add(type="game_start", game=1, t=0, fen=chess.STARTING_FEN)
        board = chess.Board()
        for ply in range(1, plies + 1):
            moves = list(board.legal_moves)
            if not moves:
                break
            move = rng.choice(moves)
            piece = board.piece_at(move.from_square)
            add(type="touch", game=1, t=ply * 1000, ply=ply, sq=chess.square_name(move.from_square),
                piece=piece.symbol() if piece else "?", side="mover", binds=True)
            san = board.san(move)
            board.push(move)
            add(type="move", game=1, t=ply * 1000 + 400, ply=ply, uci=move.uci(), san=san, fen=board.fen())
            add(type="clock", game=1, t=ply * 1000 + 600, ply=ply, side="white" if ply % 2 else "black",
                remaining=120_000)
        add(type="alert", game=1, t=10**6, ply=board.ply() + 1, code="touch_move", article="4.3.1", detail={})
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=int, default=200)
    parser.add_argument("--plies", type=int, default=100, help="plies of each board's game")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    fig = Run("console_restore")
    with tempfile.TemporaryDirectory(prefix="touchmove-bench-") as tmp:
        out = Path(tmp)
        pairings = [{"board": n, "board_id": f"board-{n:03d}", "white": {"name": f"White {n}"},
                     "black": {"name": f"Black {n}"}} for n in range(1, args.boards + 1)]
        tournament = parse_tournament({"event": "Restore bench", "time_control": "180+2", "round": 1,
                                       "broadcast": {"output_dir": str(out)},
                                       "brokers": [{"url": "mqtt://127.0.0.1:1", "bases": ["bench"]}],
                                       "rounds": [{"number": 1, "boards": pairings}]})
        lines = archive_lines(args.boards, args.plies, args.seed)
        path = out / "round-1-console.jsonl"
        path.write_text("\n".join(lines) + "\n")
        start = time.perf_counter()
        hub = Broadcaster(tournament, output_dir=out).open()
        took = time.perf_counter() - start
        kept = sum(len(g.events) for games in hub.storage.console.events.boards.values() for g in games.values())
        print(f"{len(lines)} events ({path.stat().st_size / 1e6:.1f} MB) of {args.boards} boards read back in "
              f"{took:.2f} s: {kept} kept for timelines, {len(hub.storage.alerts)} alerts")
        fig.add("boards", args.boards)
        fig.add("events", len(lines))
        fig.add("file", round(path.stat().st_size / 1e6, 1), "MB")
        fig.add("read back", round(took, 2), "s")
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    fig.write()


if __name__ == "__main__":
    main()
