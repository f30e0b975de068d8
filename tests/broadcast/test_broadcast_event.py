"""A three-round, 20-board event run through touchmove and paired between rounds by a real Swiss engine
(issue 36, "Done when").

The pairing program is PyPI's ``pairing-core`` (Dutch system): it pairs round 1, and every next round from
touchmove's ``results-2026.trf``; its pairings go to touchmove as a pairing program's TRF export
(``touchmove init tournament --from-trf``), which must give them back exactly. Each round is played on 20
simulated boards through Mosquitto (mates, resignations, draws, the arbiter's results, a forfeit), and the
round's outputs must be read by the programs organisers use: the round PGN by Debian's pgn-extract (the
autouse fixture of this folder) and python-chess, ``results.trf`` by PyPI's ``trf`` (every ``001`` line
written back byte for byte), the live JSON under lichess's reader rules; and they must hold exactly the
games played in that round (the games of the round before, still retained on the broker, never in them).
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import random
import tomllib
from pathlib import Path

import aiohttp
import chess
import chess.pgn
import trf as trf_package  # PyPI's trf, and pairing-core below: the test extra installs them (make install)

from tests.broadcast.lichess_dgt_rules import game_problems, index_problems, sans
from tests.broadcast.test_broadcast_mqtt import wait_for
from tests.broadcast.test_broadcast_trf import at
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.cli import main
from touchmove.sim.broadcast_boards import SimBoard, SimRound
from touchmove.sim.local_broker import LocalBroker

PLAYERS = 40
BOARDS = 20
ROUNDS = 3
TOKEN = {"Authorization": "Bearer event"}
FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]


def name(rank: int) -> str:
    return f"Player{rank:02d}, Test"


def rating(rank: int) -> int:
    return 2700 - 10 * rank


# -- the pairing program: pairing-core, and a TRF-16 export of its pairings ------------------------------------
def pair_round(number: int, history: dict[int, dict[int, tuple[int, str, str]]]) -> list[tuple[int, int]]:
    """pairing-core's Dutch pairings of round ``number`` from each player's rounds so far (white, black)."""
    from pairing_core import EngineRequest, PlayerData, pair

    def score(rank: int, upto: int) -> float:
        return sum({"1": 1.0, "=": 0.5, "+": 1.0}.get(code, 0.0)
                   for r, (_, _, code) in history[rank].items() if r < upto)

    players = []
    for rank in range(1, PLAYERS + 1):
        games = history[rank]
        floats = ""
        for r in sorted(games):
            opp = games[r][0]
            mine, theirs = score(rank, r), score(opp, r)
            floats += "D" if mine > theirs else "U" if mine < theirs else "-"
        players.append(PlayerData(
            id=rank, pairing_no=rank, rating=rating(rank), points=score(rank, number),
            color_hist="".join(games[r][1] for r in sorted(games)),
            opponents=frozenset(g[0] for g in games.values()), float_hist=floats))
    result = pair(EngineRequest(players=players, ruleset="dutch-till2026-compat", round_number=number))
    assert result.bye_player_id is None and len(result.pairings) == BOARDS
    return [(card.white_id, card.black_id) for card in result.pairings if card.black_id is not None]


def history_from_trf(text: str) -> dict[int, dict[int, tuple[int, str, str]]]:
    """Each player's rounds (opponent, colour, code) as pairing-core's TRF reader sees touchmove's TRF; the
    players are touchmove's start ranks, mapped back to ours by name."""
    from pairing_core.adapters.trf import parse_trf

    parsed = parse_trf(text)
    by_line = {line[4:8].strip(): line[14:47].strip() for line in text.splitlines() if line.startswith("001")}
    ours = {int(rank): int(n[6:8]) for rank, n in by_line.items()}
    assert parsed.rounds_total == ROUNDS and len(parsed.players) == PLAYERS
    history: dict[int, dict[int, tuple[int, str, str]]] = {r: {} for r in range(1, PLAYERS + 1)}
    for player in parsed.players:
        for r, game in enumerate(player.rounds, 1):
            assert game.opponent is not None, (player, r)
            history[ours[player.pairing_id]][r] = (ours[game.opponent], game.color, game.result)
    return history


def program_trf(pairings: dict[int, list[tuple[int, int]]], history: dict[int, dict[int, tuple[int, str, str]]],
                ) -> str:
    """The pairing program's TRF-16 export: the players, the rounds played with their results, the new
    round paired with blank results; laid out column by column."""
    lines = ["012 Issue 36 Open", "022 Testville", "032 POR", "092 Individual: Swiss-System",
             "102 Arbiter, Chief", "122 90 min + 30 s/move", f"XXR {ROUNDS}"]
    games: dict[int, dict[int, tuple[int, str, str]]] = {r: dict(history[r]) for r in history}
    number = max(pairings)
    for white, black in pairings[number]:
        games[white][number] = (black, "w", " ")
        games[black][number] = (white, "b", " ")
    for rank in range(1, PLAYERS + 1):
        line: list[str] = []
        at(line, 1, "001")
        at(line, 5, f"{rank:4d}")
        at(line, 10, "m")
        at(line, 15, name(rank))
        at(line, 49, f"{rating(rank):4d}")
        at(line, 54, "POR")
        at(line, 58, f"{100_000 + rank:11d}")
        points = sum({"1": 1.0, "=": 0.5, "+": 1.0}.get(g[2], 0.0) for g in games[rank].values())
        at(line, 81, f"{points:4.1f}")
        for r, (opp, colour, code) in sorted(games[rank].items()):
            col = 92 + 10 * (r - 1)
            at(line, col, f"{opp:4d}")
            at(line, col + 5, colour)
            at(line, col + 7, code)
        lines.append("".join(line).rstrip())
    return "\n".join(lines) + "\n"


# -- a round on the boards ---------------------------------------------------------------------------------------
async def play(board: SimBoard, number: int, rng: random.Random) -> tuple[list[str], str, str | None]:
    """Board ``number``'s game: (moves, result, who enters it: None for the board itself, else the arbiter's
    spelling). Board 1 a fool's mate; board 2 a forfeit (no game); board 3 a draw; others a few random
    moves and a resignation."""
    if number == 2:
        return [], "1-0", "1-0f"
    await board.start()
    moves = FOOLS_MATE if number == 1 else []
    if not moves:
        for _ in range(rng.randrange(2, 12)):
            legal = list(board.position.legal_moves)
            moves.append(rng.choice(legal).uci())
            board.position.push(chess.Move.from_uci(moves[-1]))
        board.position = chess.Board()
    for i, uci in enumerate(moves):
        await board.move(uci, remaining_ms=5_400_000 - 20_000 * i)
    if number == 1:
        await board.end("0-1", "checkmate")
        return moves, "0-1", None
    if number == 3:
        return moves, "1/2-1/2", "1/2-1/2"
    result = "1-0" if number % 2 else "0-1"
    return moves, result, result


async def run_round(number: int, toml: Path, sim: SimRound, broker: LocalBroker, out: Path,
                    rng: random.Random) -> dict[int, tuple[list[str], str, str | None]]:
    data = tomllib.loads(toml.read_text(encoding="utf-8"))
    data["broadcast"].update({"output_dir": str(out), "port": 0, "token": "event"})
    data["brokers"] = [{"url": f"mqtt://127.0.0.1:{broker.port}", "bases": ["bench-0"]}]
    t = parse_tournament(data)
    assert t.round == number
    played: dict[int, tuple[list[str], str, str | None]] = {}
    async with BroadcastService(t, port=0, svg_workers=0) as svc, aiohttp.ClientSession() as http:
        hub = svc.hub
        for board, n in sim.boards:
            played[n] = await play(board, n, rng)
        await wait_for(lambda: all(hub.storage.by_number[n].game.ply == len(played[n][0]) for n in played),
                       timeout=20, what=f"round {number}'s moves")
        for n, (_, _, entered) in played.items():
            if entered is not None:
                async with http.post(f"{svc.url}/api/boards/{n}/result", json={"result": entered},
                                     headers=TOKEN) as resp:
                    assert resp.status == 200, await resp.text()
        await wait_for(lambda: all(hub.storage.by_number[n].game.results.effective() == played[n][1] for n in played),
                       timeout=20, what=f"round {number}'s results")
        await wait_for(lambda: hub.outputs.written_version == hub.storage.version, what="written")
        for i in range(1, BOARDS + 1):  # the live JSON (served while the round is the current one)
            async with http.get(f"{svc.url}/live/round-{number}/game-{i}.json") as resp:
                doc = json.loads(await resp.text())
            assert game_problems(doc) == [], doc
            assert sans(doc) == played[i][0]
        async with http.get(f"{svc.url}/live/round-{number}/index.json") as resp:
            assert index_problems(json.loads(await resp.text())) == []
        hub.storage.save_state()
    return played


def check_round_outputs(number: int, out: Path, played: dict[int, tuple[list[str], str, str | None]],
                        pairings: list[tuple[int, int]]) -> None:
    """The round's PGN and CSV hold exactly the games played in it; results.trf reads in PyPI's trf."""
    stream = io.StringIO((out / f"round-{number}.pgn").read_text(encoding="utf-8"))
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        games.append(game)
    assert len(games) == BOARDS
    for board, game in enumerate(games, 1):
        assert game.headers["Round"] == f"{number}.{board}"
        assert [m.uci() for m in game.mainline_moves()] == played[board][0], (number, board)
        assert game.headers["Result"] == played[board][1]
        white, black = pairings[board - 1]
        assert (game.headers["White"], game.headers["Black"]) == (name(white), name(black))
    rows = list(csv.DictReader(io.StringIO((out / f"round-{number}-results.csv").read_text())))
    assert [(int(r["board"]), r["result"]) for r in rows] == [
        (n, played[n][1] + ("f" if (played[n][2] or "").endswith("f") else "")) for n in range(1, BOARDS + 1)]
    text = (out / "results.trf").read_text(encoding="utf-8")
    parsed = trf_package.loads(text)
    assert len(parsed.players) == PLAYERS
    written = trf_package.dumps(parsed)
    ours = [line for line in text.splitlines() if line.startswith("001")]
    assert [line for line in written.splitlines() if line.startswith("001")] == ours  # byte for byte
    codes = {p.name: p.games[number - 1].result for p in parsed.players}
    white2, black2 = pairings[1]
    assert (codes[name(white2)], codes[name(black2)]) == ("+", "-")  # the forfeit stays one


def test_a_three_round_event_paired_by_a_swiss_engine(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_event(broker, tmp_path))


async def _event(broker: LocalBroker, tmp_path: Path) -> None:
    rng = random.Random(36)
    out = tmp_path / "broadcast"
    history: dict[int, dict[int, tuple[int, str, str]]] = {r: {} for r in range(1, PLAYERS + 1)}
    pairings: dict[int, list[tuple[int, int]]] = {}
    async with SimRound(broker.port, boards=BOARDS, bridges=1) as sim:
        for number in range(1, ROUNDS + 1):
            pairings[number] = pair_round(number, history)
            source = tmp_path / f"pairings-{number}.trf"
            source.write_text(program_trf(pairings, history), encoding="utf-8")
            toml = tmp_path / f"round-{number}.toml"
            assert main(["init", "tournament", "--from-trf", str(source), str(toml)]) == 0
            data = tomllib.loads(toml.read_text(encoding="utf-8"))
            imported = next(r for r in data["rounds"] if r["number"] == number)["boards"]
            # the import gives the engine's pairings back: the same games, colours and board order
            assert [(b["white"]["name"], b["black"]["name"]) for b in imported] == [
                (name(w), name(b)) for w, b in pairings[number]]
            assert data["report"]["rounds"] == ROUNDS and data["report"]["allotted_time"] == "90 min + 30 s/move"
            played = await run_round(number, toml, sim, broker, out, rng)
            check_round_outputs(number, out, played, pairings[number])
            # the next round is paired from touchmove's TRF-2026, read by the engine's own TRF reader
            history = history_from_trf((out / "results-2026.trf").read_text(encoding="utf-8"))
            assert all(len(history[r]) == number for r in history)
        await sim.clear_retained()
    # every round's outputs are still right once the event is over (nothing of a later round leaked back)
    for number in range(1, ROUNDS + 1):
        assert (out / f"round-{number}.pgn").exists()
    final = [x for x in (out / "results.trf").read_text().splitlines() if x.startswith("001")]
    assert len(final) == PLAYERS and all(len(line) == 91 + 10 * (ROUNDS - 1) + 8 for line in final)
