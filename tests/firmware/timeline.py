"""Scripted board timelines for the sim driver: a game played by a simple hand model, with contact chatter
and slides, plus the events the firmware must report for it."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

import chess


@dataclass
class Timeline:
    records: list[dict] = field(default_factory=list)
    #: what the firmware must report: ("lift" | "place", square name) or ("button", id), with the raw time
    expected: list[tuple[str, str, int]] = field(default_factory=list)
    final_occ: int = chess.BB_RANK_1 | chess.BB_RANK_2 | chess.BB_RANK_7 | chess.BB_RANK_8
    end_t: int = 0

    def lines(self) -> list[str]:
        return [json.dumps(r, separators=(",", ":")) for r in self.records]

    def write(self, path) -> None:
        path.write_text("".join(line + "\n" for line in self.lines()))


class _Hand:
    def __init__(self, tl: Timeline, rng: random.Random, chatter: float, slide: float) -> None:
        self.tl, self.rng, self.chatter, self.slide = tl, rng, chatter, slide

    def raw(self, t: int, kind: str, sq: int) -> None:
        self.tl.records.append({"t": t, "type": kind, "sq": chess.square_name(sq)})

    def change(self, t: int, kind: str, sq: int) -> int:
        """A real lift/place at t, maybe with contact chatter (a few ms of flicker) that must not show."""
        other = "place" if kind == "lift" else "lift"
        self.raw(t, kind, sq)
        if self.rng.random() < self.chatter:
            for dt in (1, 3, 4, 6)[: self.rng.choice((2, 4))]:
                self.raw(t + dt, other if dt in (1, 4) else kind, sq)
        self.tl.expected.append((kind, chess.square_name(sq), t))
        return t + self.rng.randint(150, 400)

    def move(self, board: chess.Board, move: chess.Move, t: int) -> int:
        frm, to = move.from_square, move.to_square
        if board.is_castling(move):
            rook_from, rook_to = (
                (chess.H1, chess.F1) if to == chess.G1 else (chess.A1, chess.D1) if to == chess.C1
                else (chess.H8, chess.F8) if to == chess.G8 else (chess.A8, chess.D8))
            for kind, sq in (("lift", frm), ("place", to), ("lift", rook_from), ("place", rook_to)):
                t = self.change(t, kind, sq)
            return t
        t = self.change(t, "lift", frm)
        if board.is_en_passant(move):
            t = self.change(t, "place", to)
            return self.change(t, "lift", chess.square(chess.square_file(to), chess.square_rank(frm)))
        if board.is_capture(move):
            t = self.change(t, "lift", to)
        elif self.rng.random() < self.slide:
            between = chess.SquareSet(chess.between(frm, to))
            if between:
                mid = self.rng.choice(list(between))  # the piece rests on a square on its way: reported
                t = self.change(t, "place", mid)
                t = self.change(t, "lift", mid)
        return self.change(t, "place", to)


def game(seed: int, plies: int, think_ms: tuple[int, int] = (1500, 3000), chatter: float = 0.5,
         slide: float = 0.2, clock_presses: bool = True) -> Timeline:
    """A random legal game of ``plies`` plies starting at t = 1000 ms."""
    rng = random.Random(seed)
    for attempt in range(100):
        board = chess.Board()
        moves = []
        while len(moves) < plies and not board.is_game_over():
            m = rng.choice(list(board.legal_moves))
            moves.append(m)
            board.push(m)
        if len(moves) == plies:
            break
        rng = random.Random(seed * 1000 + attempt)
    tl = Timeline()
    hand = _Hand(tl, rng, chatter, slide)
    board = chess.Board()
    t = 1000
    for m in moves:
        t = hand.move(board, m, t)
        if clock_presses:
            side = "white" if board.turn == chess.WHITE else "black"
            tl.records.append({"t": t, "type": "clock", "side": side})
            tl.expected.append(("button", "clock_" + side, t))
            t += 100
        board.push(m)
        t += rng.randint(*think_ms)
    tl.final_occ = int(board.occupied)
    tl.end_t = t
    return tl
