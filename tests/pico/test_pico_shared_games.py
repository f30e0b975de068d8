"""Shared games (../shared/data/games) on emulated Picos with the hc165 chain, end to end: each game exact on MQTT,
in the journal and in ``touchmove export``. Two boards play at a time on one bridge (each its own board id, as two
boards on one host), at rig.PACE.

Which games: the fewest plies of shared games from the standard start that together have every kind of move a
board must get right (a capture, a check, castling on each side, en passant, a promotion, a mate): three games,
93 plies. Before: for each kind the shortest game that has it, six games and 140 plies; before that the twenty
shortest games (437 plies, 629 s of the suite's 13 minutes on a quiet machine), which had neither en passant nor
a promotion. No shared game has an under-promotion: to the sensors it is a promotion like any other (a pawn
lifted, a piece placed), the piece it became is the host's to learn."""

from __future__ import annotations

import chess

from tests.host.games import require_games
from tests.pico.emulator import EmulatedPico, FlashCache
from tests.pico.rig import BridgeRig, board_timeline, budget_s

KINDS = ("capture", "check", "O-O", "O-O-O", "en passant", "promotion", "mate")
AT_ONCE = 2


def move_kinds(moves: list[chess.Move]) -> set[str]:
    """The kinds of move (KINDS) a game from the standard start has."""
    board = chess.Board()
    out: set[str] = set()
    for m in moves:
        if board.is_castling(m):
            out.add("O-O" if chess.square_file(m.to_square) == 6 else "O-O-O")
        if board.is_en_passant(m):
            out.add("en passant")
        elif board.is_capture(m):
            out.add("capture")
        if m.promotion:
            out.add("promotion")
        if board.gives_check(m):
            out.add("check")
        board.push(m)
    if board.is_checkmate():
        out.add("mate")
    return out


def pick_games() -> list[tuple[str, list[chess.Move]]]:
    """The games of at least 10 plies from the standard start that together have every one of KINDS with the
    fewest plies in all (searched over the shortest game of each set of kinds; ties: fewer games, then names),
    the longest first (two boards at a time: the long ones side by side)."""
    games = [(name, moves) for name, start, moves in require_games()
             if start.fen() == chess.STARTING_FEN and not start.chess960 and len(moves) >= 10]
    shortest: dict[frozenset[str], tuple[str, list[chess.Move]]] = {}
    for name, moves in sorted(games, key=lambda g: (len(g[1]), g[0])):
        shortest.setdefault(frozenset(move_kinds(moves)), (name, moves))
    # a search over those games, shortest first, skipping one that adds no kind and leaving a branch once it has
    # more plies than the best cover found
    cands = sorted(((len(moves), name, kinds, moves) for kinds, (name, moves) in shortest.items()),
                   key=lambda c: (c[0], c[1]))
    every = frozenset(KINDS)
    best: tuple[int, int, list[str]] | None = None
    chosen_best: list[int] = []

    def search(i: int, covered: frozenset[str], plies: int, chosen: list[int]) -> None:
        nonlocal best, chosen_best
        if covered == every:
            key = (plies, len(chosen), sorted(cands[j][1] for j in chosen))
            if best is None or key < best:
                best, chosen_best = key, list(chosen)
            return
        for j in range(i, len(cands)):
            if best is not None and plies + cands[j][0] > best[0]:
                break  # every later game is as long or longer
            if not cands[j][2] <= covered:
                search(j + 1, covered | cands[j][2], plies + cands[j][0], [*chosen, j])

    search(0, frozenset(), 0, [])
    picked = [(cands[j][1], cands[j][3]) for j in chosen_best]
    return sorted(picked, key=lambda g: (-len(g[1]), g[0]))


def test_the_games_cover_every_kind_of_move() -> None:
    games = pick_games()
    covered = set().union(*(move_kinds(m) for _, m in games))
    assert covered == set(KINDS) and len(games) <= len(KINDS)
    # the fewest plies that cover them (93 with ../shared/data/games; six games, 140 plies, before)
    assert sum(len(m) for _, m in games) <= 93, [(name, len(m)) for name, m in games]


def test_shared_games_on_hc165(rig: BridgeRig, flashes: FlashCache) -> None:
    games = pick_games()
    flash = flashes.board(None)
    totals = {"played": 0, "published": 0, "journaled": 0, "exported": 0}
    for first in range(0, len(games), AT_ONCE):
        batch = games[first:first + AT_ONCE]
        running: list[tuple[str, list[str], EmulatedPico]] = []
        for k, (_name, moves) in enumerate(batch):
            board_id = f"{0xE6613852_00000000 + first + k:016x}"
            pico = rig.board(flash, "hc165", f"ttyPICO{first + k}", board_id=board_id,
                             occ=chess.Board().occupied).start()
            running.append((board_id, [m.uci() for m in moves], pico))
        for board_id, _want, pico in running:
            pico.wait(lambda e: e.get("ev") == "line" and '"hello"' in e["text"], 300, f"{board_id}'s hello")
        budget = 0.0
        for (_board_id, _want, pico), (_name, moves) in zip(running, batch, strict=True):
            timeline = board_timeline(chess.Board(), moves, seed=first)
            pico.play(timeline)
            budget = max(budget, AT_ONCE * budget_s(timeline))
        for board_id, want, pico in running:
            rig.wait_moves(board_id, want, budget)
            counts = rig.assert_exact(board_id, want)
            for key in totals:
                totals[key] += counts[key]
            assert not pico.of("reset")
            pico.stop()
    assert totals["played"] == totals["published"] == totals["journaled"] == totals["exported"]
    assert totals["played"] == sum(len(m) for _, m in games)
