"""Unit tests: the tournament file, live games from events, the round PGN, results and the kings."""

from __future__ import annotations

import asyncio
import io
import json
import random
import time
from pathlib import Path

import chess
import chess.pgn
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.broadcast.broadcast_helpers import make_tournament, tournament_data
from touchmove.broadcast import bridge_topics
from touchmove.broadcast.bridge_ingest import KINGS_STEADY_S
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import ActionError, Broadcaster
from touchmove.broadcast.live_pgn import LiveGame, RoundPgn, write_atomically
from touchmove.broadcast.results import kings_result, normalize_result, result_from_king_squares
from touchmove.broadcast.tournament import TournamentError, load_tournament, parse_tournament
from touchmove.clocks import ManualClock

EXAMPLE = """
event = "Touchmove Open 2026"
site = "Lisbon POR"
time_control = "5400+30"
round = 2

[broadcast]
output_dir = "out"
port = 8123

[[brokers]]
url = "mqtt://user:pw@broker.local:1884"
bases = ["hall-a", "hall-b"]
share_group = "broadcast"

[[rounds]]
number = 2
date = 2026-11-29

[[rounds.boards]]
board = 2
board_id = "a02"
white = "Doe, John"
black = { name = "Roe, Jane", elo = 2101 }

[[rounds.boards]]
board = 1
board_id = "a01"
result = "½-½"
white = { name = "Carlsen, Magnus", fide_id = 1503014, title = "GM", elo = 2830 }
black = { name = "Nepomniachtchi, Ian", fide_id = 4168119, title = "GM", elo = 2770 }
"""


def moves_events(ucis: list[str], game: int = 1, start: int = 1, clocks: bool = False) -> list[dict]:
    board = chess.Board()
    out: list[dict] = [{"type": "game_start", "game": game, "fen": board.fen(), "t": 0}]
    for i, uci in enumerate(ucis, start=1):
        move = chess.Move.from_uci(uci)
        san = board.san(move)
        board.push(move)
        ev = {"type": "move", "game": game, "ply": i, "uci": uci, "san": san, "fen": board.fen(), "t": i}
        out.append(ev)
        if clocks:
            out.append({"type": "clock", "game": game, "ply": i, "side": "white" if i % 2 else "black",
                        "remaining": 180_000 - i * 1500, "t": i})
    return out


def test_tournament_file(tmp_path: Path) -> None:
    path = tmp_path / "tournament.toml"
    path.write_text(EXAMPLE, encoding="utf-8")
    t = load_tournament(path)
    assert t.event == "Touchmove Open 2026" and t.round == 2 and t.time_control == "5400+30"
    rnd = t.current_round()
    assert [p.board for p in rnd.pairings] == [1, 2]
    first = rnd.pairing(1)
    assert first.white.fide_id == 1503014 and first.white.title == "GM" and first.result == "1/2-1/2"
    assert rnd.pairing(2).white.elo is None and rnd.pairing(2).black.elo == 2101
    assert t.settings.output_dir == tmp_path / "out" and t.settings.port == 8123
    broker = t.brokers[0]
    assert (broker.host, broker.port) == ("broker.local", 1884)
    assert (broker.username, broker.password) == ("user", "pw")
    assert broker.bases == ("hall-a", "hall-b") and broker.share_group == "broadcast"
    assert str(t.round_date()) == "2026-11-29"


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("event"), "event"),
    (lambda d: d.update(round=9), "round 9"),
    (lambda d: d["rounds"][0]["boards"][1].update(board_id="b01"), "twice"),
    (lambda d: d["rounds"][0]["boards"][0].update(result="2-0"), "result"),
    (lambda d: d["rounds"][0]["boards"][0].update(white=3), "white"),
])
def test_tournament_errors(mutate, message: str) -> None:
    data = tournament_data(2)
    mutate(data)
    with pytest.raises(TournamentError, match=message):
        parse_tournament(data)


def test_live_game_moves_duplicates_amend_takeback() -> None:
    game = LiveGame()
    events = moves_events(["e2e4", "e7e5", "g1f3", "b8c6"])
    assert all(game.apply(e) for e in events)
    assert game.ply == 4 and [m.san for m in game.moves] == ["e4", "e5", "Nf3", "Nc6"]
    assert not game.apply(events[2])  # redelivered: no change
    assert not game.apply(events[0])  # the same game's start again: no change
    # amend ply 3 (Nf3 -> Nc3): Nc6 still legal after, kept
    amended = {"type": "move_amended", "game": 1, "ply": 3, "uci": "b1c3", "san": "Nc3", "t": 9}
    assert game.apply(amended)
    assert [m.san for m in game.moves] == ["e4", "e5", "Nc3", "Nc6"]
    assert game.apply({"type": "takeback", "game": 1, "ply": 3, "t": 10})
    assert game.ply == 2
    # a gap: ply 5 with 2 known
    assert not game.apply({"type": "move", "game": 1, "ply": 5, "uci": "d2d4", "t": 11})
    assert game.needs_resync
    # an illegal move is never kept
    game.needs_resync = False
    assert not game.apply({"type": "move", "game": 1, "ply": 3, "uci": "e4e5", "t": 12})
    assert game.ply == 2 and game.needs_resync


def test_a_board_claim_is_the_boards_result_and_never_freezes_the_game() -> None:
    """``game_end`` ``"by": "board"`` (read from the pieces): the board's result, withdrawn by ``game_resumed``; the
    later plies are taken (only an arbiter's declaration freezes the game)."""
    game = LiveGame()
    assert all(game.apply(e) for e in moves_events(["e2e4", "e7e5"]))
    end = {"type": "game_end", "game": 1, "t": 5, "result": "1-0", "reason": "result shown with the kings",
           "article": "", "by": "board"}
    assert game.apply(end)
    assert (game.results.board, game.results.arbiter, game.frozen_by_declaration) == ("1-0", None, False)
    assert game.apply({"type": "game_resumed", "game": 1, "t": 6, "ply": 3})
    assert game.results.effective() == "*"
    assert game.apply({"type": "move", "game": 1, "ply": 3, "uci": "g1f3", "san": "Nf3", "t": 7})
    assert game.ply == 3


def test_kings_in_the_centre_are_a_claim_seen_steadily_and_withdrawn(tmp_path: Path) -> None:
    """The kings in the centre (occupancy, a touchmove board) are a result once they have stood there
    KINGS_STEADY_S, and only while the pieces are off the game's position: a reading gone before is nothing, and
    the board showing the game again (the kings put back) withdraws it."""
    clock = ManualClock()
    hub = Broadcaster(make_tournament(1, out=tmp_path), output_dir=tmp_path, clock=clock).open()
    for e in moves_events(["e2e4", "e7e5", "g1f3", "b8c6"]):
        hub.handle(BridgeMessage("touchmove", "b01", "events", {**e, "board": "b01"}))
    board = hub.storage.by_number[1].game.board()
    occ = (int(board.occupied) & ~chess.BB_E1 & ~chess.BB_E8) | chess.BB_D4 | chess.BB_D5
    back = int(board.occupied)
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"in_sync": False, "occupancy": f"{occ:016x}"}))
    clock.advance(0.25)                  # one scan later the board shows the game again: a misreading, nothing
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"in_sync": True, "occupancy": f"{back:016x}"}))
    clock.advance(KINGS_STEADY_S)
    hub.ingest.confirm_all_kings()
    assert hub.storage.by_number[1].game.results.effective() == "*"
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"in_sync": False, "occupancy": f"{occ:016x}"}))
    clock.advance(KINGS_STEADY_S / 2)
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"in_sync": False, "occupancy": f"{occ:016x}"}))
    assert hub.storage.by_number[1].game.results.effective() == "*"
    clock.advance(KINGS_STEADY_S / 2 + 0.01)
    hub.ingest.confirm_all_kings()
    assert hub.storage.by_number[1].game.results.effective() == "1/2-1/2"
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"in_sync": True, "occupancy": f"{back:016x}"}))
    assert hub.storage.by_number[1].game.results.effective() == "*"
    # shown, then at once the board cleared (not the game's position again): the players moved on, it stands
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"in_sync": False, "occupancy": f"{occ:016x}"}))
    clock.advance(0.3)
    cleared = occ & ~chess.BB_RANK_1 & ~chess.BB_RANK_2
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"in_sync": False, "occupancy": f"{cleared:016x}"}))
    assert hub.storage.by_number[1].game.results.effective() == "1/2-1/2"


def test_live_game_new_game_and_late_events() -> None:
    game = LiveGame()
    for e in moves_events(["e2e4", "e7e5"]):
        game.apply(e)
    assert game.apply({"type": "game_end", "game": 1, "result": "1-0", "reason": "resign", "t": 5})
    assert game.results.effective() == "1-0"
    fen = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"
    assert game.apply({"type": "game_start", "game": 2, "fen": fen, "t": 6})
    assert game.ply == 0 and game.results.effective() == "*" and game.start_fen == fen
    assert not game.apply({"type": "move", "game": 1, "ply": 3, "uci": "g1f3", "t": 7})  # late, game 1


def test_clock_comments_and_round_pgn() -> None:
    t = make_tournament(3)
    games = {1: LiveGame(), 2: LiveGame()}
    for e in moves_events(["e2e4", "c7c5", "g1f3"], clocks=True):
        games[1].apply(e)
    # the clock press before its move, and a move with clock_ms
    games[2].apply(moves_events([])[0])
    games[2].apply({"type": "clock", "game": 1, "ply": 1, "side": "white", "remaining": 3_725_400, "t": 1})
    games[2].apply({"type": "move", "game": 1, "ply": 1, "uci": "d2d4", "t": 1})
    games[2].apply({"type": "move", "game": 1, "ply": 2, "uci": "g8f6", "t": 2, "clock_ms": 59_999})
    games[2].set_result("arbiter", "0-1")
    text = RoundPgn(t).render(games)
    assert "[%clk 0:02:58]" in text and "[%clk 1:02:05]" in text and "[%clk 0:00:59]" in text
    stream = io.StringIO(text)
    read = []
    while (g := chess.pgn.read_game(stream)) is not None:
        assert not g.errors
        read.append(g)
    assert len(read) == 3
    h = read[0].headers
    assert h["Round"] == "3.1" and h["White"] == "White, Player 1" and h["WhiteFideId"] == "1001"
    assert h["BlackElo"] == "2399" and h["TimeControl"] == "180+2" and h["Date"] == "2026.11.29"
    assert h["Event"] == "Test Open" and h["Site"] == "Testville" and h["WhiteTitle"] == "GM"
    assert [m.uci() for m in read[0].mainline_moves()] == ["e2e4", "c7c5", "g1f3"]
    assert read[0].end().clock() == 175.0
    assert read[1].headers["Result"] == "0-1" and read[2].headers["Result"] == "*"
    assert len(list(read[2].mainline_moves())) == 0


def test_chess960_start_is_in_the_pgn() -> None:
    t = make_tournament(1)
    start = chess.Board.from_chess960_pos(518 - 100)
    game = LiveGame()
    game.apply({"type": "game_start", "game": 1, "fen": start.fen(), "chess960": True, "t": 0})
    move = next(iter(start.legal_moves))
    game.apply({"type": "move", "game": 1, "ply": 1, "uci": move.uci(), "t": 1})
    read = chess.pgn.read_game(io.StringIO(RoundPgn(t).render({1: game})))
    assert read is not None and read.headers["Variant"] == "Chess960" and read.headers["FEN"] == start.fen()
    assert list(read.mainline_moves()) == [move]


def test_write_atomically(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "atomic.pgn"
    write_atomically(target, "one")
    write_atomically(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["atomic.pgn"]


def test_results_spelling_and_kings_mapping() -> None:
    assert normalize_result("½-½") == "1/2-1/2" and normalize_result("1-0") == "1-0"
    assert normalize_result("draw") == "1/2-1/2" and normalize_result("3-0") is None
    assert result_from_king_squares(chess.D5, chess.E4) == "1-0"
    assert result_from_king_squares(chess.D4, chess.E5) == "0-1"
    for a, b in [(chess.D4, chess.D5), (chess.E4, chess.E5), (chess.D4, chess.E4), (chess.D5, chess.E5)]:
        assert result_from_king_squares(a, b) == "1/2-1/2"
    assert result_from_king_squares(chess.D4, chess.A1) is None


def test_kings_result_from_occupancy() -> None:
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/6K1 w - - 0 30")
    occ = int(board.occupied)
    g1, g8 = chess.BB_G1, chess.BB_G8
    assert kings_result(board, occ) is None
    assert kings_result(board, (occ & ~g1 & ~g8) | chess.BB_D5 | chess.BB_E4) == "1-0"
    assert kings_result(board, (occ & ~g1 & ~g8) | chess.BB_D4 | chess.BB_E5) == "0-1"
    assert kings_result(board, (occ & ~g1 & ~g8) | chess.BB_D4 | chess.BB_D5) == "1/2-1/2"
    # only the kings lifted, or another piece moved too: no result
    assert kings_result(board, occ & ~g1 & ~g8) is None
    moved_pawn = (occ & ~g1 & ~g8 & ~chess.BB_F2) | chess.BB_F3
    assert kings_result(board, moved_pawn | chess.BB_D5 | chess.BB_E4) is None
    # a king already on a centre square: only the other one moves there
    board2 = chess.Board("8/8/8/3k4/8/8/8/6K1 w - - 0 60")
    assert kings_result(board2, (int(board2.occupied) & ~g1) | chess.BB_E4) == "1-0"


def test_occupancy_and_topics() -> None:
    assert bridge_topics.occupancy_mask("ffff00000000ffff") == int(chess.Board().occupied)
    assert bridge_topics.occupancy_mask(["a1", "h8"]) == chess.BB_A1 | chess.BB_H8
    assert bridge_topics.occupancy_mask("0x1") == 1 and bridge_topics.occupancy_mask(True) is None
    msg = bridge_topics.parse("hall/a/boards/x1/events", b'{"type":"move"}', ["other", "hall/a"])
    assert msg == BridgeMessage("hall/a", "x1", "events", {"type": "move"})
    avail = bridge_topics.parse("t/boards/x1/availability", b'{"state":"online"}', ["t"])
    assert avail is not None and avail.payload == "online"
    assert bridge_topics.parse("t/boards/x1/unknown", b"{}", ["t"]) is None
    bad = bridge_topics.parse("t/bridge/state", b"not json", ["t"])
    assert bad == BridgeMessage("t", None, "bridge_state", None)
    subs = bridge_topics.subscriptions("t", "grp")
    assert "$share/grp/t/boards/+/events" in subs and "t/boards/+/state" in subs


def test_broadcaster_events_results_and_actions(tmp_path: Path) -> None:
    asyncio.run(_broadcaster_events_results_and_actions(tmp_path))


async def _broadcaster_events_results_and_actions(tmp_path: Path) -> None:
    t = make_tournament(2)
    sent: list[tuple[int, str, bytes]] = []

    async def publish(broker: int, topic: str, payload: bytes) -> None:
        sent.append((broker, topic, payload))

    clock = ManualClock(wall=time.time())
    hub = Broadcaster(t, output_dir=tmp_path, publish=publish, clock=clock).open()
    queue = hub.streams.listen()
    for i, e in enumerate(moves_events(["e2e4", "e7e5"]), start=1):
        hub.handle(BridgeMessage("touchmove", "b01", "events", {**e, "seq": i, "session": "s1"}))
    again = {"type": "move", "game": 1, "ply": 2, "uci": "d7d5", "seq": 2, "session": "s1"}
    hub.handle(BridgeMessage("touchmove", "b01", "events", again))  # seq seen: dropped
    assert hub.storage.by_number[1].game.ply == 2 and hub.storage.by_number[1].last_move() == "1... e5"
    hub.handle(BridgeMessage("touchmove", "b01", "events", {"type": "alert", "game": 1, "ply": 3,
                                                          "code": "touch_move", "article": "4.3.1",
                                                          "detail": {"sq": "g1"}, "seq": 4, "session": "s1"}))
    assert hub.storage.alerts[0].code == "touch_move" and hub.storage.alerts[0].board == 1
    hub.actions.acknowledge(hub.storage.alerts[0].id)
    assert hub.storage.alerts[0].acked
    hub.streams.flush()
    kinds = []
    while not queue.empty():
        kinds.append(queue.get_nowait()[0])
    assert kinds.count("board") == 1 and "alert" in kinds and "ack" in kinds
    # kings in the centre (the board reports occupancy)
    board = hub.storage.by_number[1].game.board()
    occ = (int(board.occupied) & ~chess.BB_E1 & ~chess.BB_E8) | chess.BB_D4 | chess.BB_D5
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"in_sync": False, "occupancy": f"{occ:016x}"}))
    assert hub.storage.by_number[1].game.results.effective() == "*"      # not yet: one glimpse is no result
    clock.advance(KINGS_STEADY_S)
    hub.ingest.confirm_all_kings()
    assert hub.storage.by_number[1].game.results.effective() == "1/2-1/2"
    assert hub.storage.by_number[1].game.results.source() == "kings"
    # the arbiter overrides, and it is saved
    hub.actions.record_result(1, "1-0")
    saved = json.loads((tmp_path / "round-3-state.json").read_text())
    assert saved["boards"]["1"]["entries"][0]["results"]["arbiter"] == "1-0"
    assert Broadcaster(t, output_dir=tmp_path).open().storage.by_number[1].game.results.effective() == "1-0"
    path = hub.outputs.write_now()
    assert '[Result "1-0"]' in path.read_text() and "1. e4 e5 1-0" in path.read_text()
    # actions become bridge commands
    await hub.actions.promote(2, "N")
    await hub.actions.setup(2, chess.STARTING_FEN)
    assert sent[0][1] == "touchmove/boards/b02/set" and b'"command":"promote","piece":"n"' in sent[0][2]
    assert b'"setup"' in sent[1][2]
    with pytest.raises(ActionError):
        await hub.actions.takeback(2, 1)  # no plies on board 2
    with pytest.raises(ActionError):
        await hub.actions.promote(9, "q")
    with pytest.raises(ActionError):
        await hub.actions.setup(1, "not a fen")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), black_first=st.booleans(), clocks=st.booleans())
def test_round_pgn_reads_back_exactly(seed: int, black_first: bool, clocks: bool) -> None:
    """Whatever the game, python-chess reads our PGN text back to the same moves, clocks and headers."""
    rng = random.Random(seed)
    start = chess.Board()
    if black_first:
        start.push_san("e4")
        start = chess.Board(start.fen())
    game = LiveGame()
    game.apply({"type": "game_start", "game": 1, "fen": start.fen(), "t": 0})
    board = start.copy()
    played: list[tuple[str, int | None]] = []
    for ply in range(1, rng.randrange(0, 80)):
        if board.is_game_over():
            break
        move = rng.choice(list(board.legal_moves))
        board.push(move)
        clk = rng.randrange(0, 7_200_000) if clocks and rng.random() < 0.8 else None
        event = {"type": "move", "game": 1, "ply": ply, "uci": move.uci(), "t": ply}
        if clk is not None:
            event["clock_ms"] = clk
        assert game.apply(event)
        played.append((move.uci(), clk))
    t = make_tournament(1)
    read = chess.pgn.read_game(io.StringIO(RoundPgn(t).render({1: game})))
    assert read is not None and not read.errors
    assert read.board().fen() == start.fen()
    nodes = list(read.mainline())
    assert [n.move.uci() for n in nodes] == [u for u, _ in played]
    assert [n.clock() for n in nodes] == [None if c is None else float(c // 1000) for _, c in played]


def test_header_values_are_escaped() -> None:
    data = tournament_data(1)
    data["rounds"][0]["boards"][0]["white"] = {"name": 'O"Brien \\ Jr'}
    text = RoundPgn(parse_tournament(data)).render({})
    assert '[White "O\\"Brien \\\\ Jr"]' in text  # PGN standard 8.1.1: \" and \\ in tag values
    read = chess.pgn.read_game(io.StringIO(text))
    assert read is not None and not read.errors and read.headers["Black"] == "Black, Player 1"


def test_docs_tournament_example_parses(tmp_path: Path) -> None:
    """The tournament.toml shown in docs/broadcast.md (the sample ``touchmove init tournament`` writes) is a
    valid file."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "broadcast.md").read_text(encoding="utf-8")
    block = page[page.index("<!-- sample: tournament -->"):page.index("<!-- end of sample -->")]
    toml = "\n".join(line[4:] for line in block.splitlines()[1:])
    path = tmp_path / "tournament.toml"
    path.write_text(toml, encoding="utf-8")
    t = load_tournament(path)
    assert t.round == 3 and [p.board_id for p in t.current_round().pairings] == ["e6614103e7", "e6614103f2"]
    assert t.brokers[0].bases == ("touchmove",)
    reference = page[page.index("## The tournament file"):]
    reference = reference[reference.index("```toml\n") + 8:]
    path.write_text(reference[:reference.index("```")], encoding="utf-8")
    t = load_tournament(path)
    assert t.delay_seconds() == 900 and [x.round_id for x in t.lichess_targets()] == ["AbCd1234", "EfGh5678"]
    assert t.current_round().pairings[0].white.federation == "NOR"


def test_missed_game_start_is_resynced_from_the_bridge_pgn(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(1), output_dir=tmp_path).open()
    for e in moves_events(["e2e4", "e7e5"]):
        hub.handle(BridgeMessage("touchmove", "b01", "events", e))
    # game 2 started while we were away, and its first move was lost too
    hub.handle(BridgeMessage("touchmove", "b01", "events",
                             {"type": "move", "game": 2, "ply": 2, "uci": "d7d5", "san": "d5"}))
    view = hub.storage.by_number[1]
    held = view.games.held
    # the round's game (moves, no result yet) is kept; the new game is followed, held for the arbiter
    assert [m.uci for m in view.game.moves] == ["e2e4", "e7e5"] and view.game.number == 1
    assert held is not None and held.number == 2 and held.needs_resync and held.ply == 0
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 2, "ply": 2, "in_sync": True}))
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", '[Result "*"]\n\n1. d4 d5 *\n'))
    assert not held.needs_resync and [m.uci for m in held.moves] == ["d2d4", "d7d5"]
    hub.handle(BridgeMessage("touchmove", "b01", "events",
                             {"type": "move", "game": 2, "ply": 3, "uci": "c2c4", "san": "c4"}))
    assert [m.san for m in held.moves] == ["d4", "d5", "c4"]
    assert "1. e4 e5 *" in hub.outputs.round_pgn() and "c4" not in hub.outputs.round_pgn()
    # the arbiter: the new game replaces the round's (a game restarted)
    hub.actions.permit_game(1, "replace")
    assert view.game is held and view.games.held is None and "1. d4 d5 2. c4 *" in hub.outputs.round_pgn()


def test_alert_replayed_after_a_bridge_restart_is_not_repeated(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(1), output_dir=tmp_path).open()
    alert = {"type": "alert", "game": 1, "ply": 3, "code": "touch_move", "article": "4.3.1", "seq": 7}
    hub.handle(BridgeMessage("touchmove", "b01", "events", {**alert, "session": "s1"}))
    hub.handle(BridgeMessage("touchmove", "b01", "events", {**alert, "session": "s2"}))  # same journal seq
    hub.handle(BridgeMessage("touchmove", "b01", "events", {**alert, "seq": 9, "session": "s2"}))  # a new one
    assert [a.id for a in hub.storage.alerts] == [1, 2]


def test_bridge_offline_marks_its_boards_offline(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(2), output_dir=tmp_path).open()
    hub.handle(BridgeMessage("hall-a", "b01", "availability", "online"))
    hub.handle(BridgeMessage("hall-b", "b02", "availability", "online"))
    hub.handle(BridgeMessage("hall-a", None, "bridge_state", {"state": "offline"}))
    assert hub.ingest.bridges == {"hall-a": "offline"}
    assert hub.storage.by_number[1].online is False and hub.storage.by_number[2].online is True
