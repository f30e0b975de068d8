"""The broadcast delay: timed on the monotonic clock (a wall-clock step moves nothing), and its public view kept
on disk as it changes (a broadcaster killed without saving serves what was public before, never less, never
more). In process, on a :class:`~touchmove.clocks.ManualClock`; the real process under ``kill -9`` is
``test_broadcast_delay_process.py``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import chess
import chess.pgn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.broadcast.broadcast_helpers import plies, tournament_data
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.delay_journal import DelayJournal, delay_path
from touchmove.broadcast.live_pgn import GameSnapshot, PlyRecord
from touchmove.broadcast.tournament import Tournament, parse_tournament
from touchmove.clocks import ManualClock

#: A legal game long enough for a delayed round (Ruy Lopez, Closed).
GAME = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "e1g1", "f8e7", "f1e1", "b7b5",
        "a4b3", "d7d6", "c2c3", "e8g8", "h2h3", "c6a5", "b3c2", "c7c5", "d2d4", "d8c7"]
DELAY = 15 * 60.0


def delayed(tmp_path: Path, boards: int = 2) -> Tournament:
    data = tournament_data(boards, out=tmp_path)
    data["broadcast"]["delay_minutes"] = DELAY / 60
    return parse_tournament(data)


class Board:
    """One board's events, numbered as a bridge numbers them."""

    def __init__(self, hub: Broadcaster, board_id: str) -> None:
        self.hub, self.board_id, self.seq, self.ply = hub, board_id, 0, 0

    def send(self, event: dict[str, Any]) -> None:
        self.seq += 1
        self.hub.handle(BridgeMessage("touchmove", self.board_id, "events",
                                      {**event, "board": self.board_id, "seq": self.seq, "session": "s1",
                                       "game": 1, "t": self.seq * 1000}))

    def start(self) -> None:
        self.send({"type": "game_start", "fen": chess.STARTING_FEN})

    def move(self) -> None:
        self.ply += 1
        self.send({"type": "move", "ply": self.ply, "uci": GAME[self.ply - 1]})


def play(hub: Broadcaster, clock: ManualClock, boards: list[Board], moves: int, every: float) -> None:
    for _ in range(moves):
        for board in boards:
            board.move()
        clock.advance(every)


def test_a_wall_clock_step_changes_nothing_public(tmp_path: Path) -> None:
    clock = ManualClock()
    hub = Broadcaster(delayed(tmp_path), output_dir=tmp_path, clock=clock).open()
    b1 = Board(hub, "b01")
    b1.start()
    play(hub, clock, [b1], 4, 60.0)       # 4 plies, one a minute
    clock.advance(DELAY - 4 * 60 + 90)     # the first 2 plies are 15 minutes old: public
    assert plies(hub.outputs.public_pgn()) == [2, 0]
    before = hub.outputs.public_pgn()
    clock.step_wall(16 * 60)               # NTP steps the hall PC 16 minutes forward
    assert hub.outputs.public_pgn() == before      # the live moves are not shown
    clock.step_wall(-3600 - 16 * 60)       # then an hour back
    assert hub.outputs.public_pgn() == before      # nothing public is taken back
    assert hub.outputs.write_now().read_text() == before
    clock.advance(2 * 60)                  # time passing still brings the rest when due
    assert plies(hub.outputs.public_pgn()) == [4, 0]


def test_a_restart_without_saving_serves_what_was_public_never_less_never_more(tmp_path: Path) -> None:
    """As after ``kill -9``: nothing saved since the game started; the delay line comes back from its file."""
    clock = ManualClock()
    t = delayed(tmp_path)
    hub = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    boards = [Board(hub, "b01"), Board(hub, "b02")]
    for b in boards:
        b.start()
    hub.storage.save_state()                        # the state as saved at the game start (no move in it)
    play(hub, clock, boards, 20, 60.0)      # 20 plies a board, one a minute
    public = hub.outputs.public_pgn()
    assert plies(public) == [6, 6]
    due = hub.storage.delay_line.next_due(clock.monotonic())
    assert due is not None
    clock.advance(5.0)                      # the broadcaster is killed and restarted 5 s later
    restarted = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    assert restarted.outputs.public_pgn() == public  # exactly what was public: never less, never more
    assert restarted.storage.delay_line.next_due(clock.monotonic()) == due  # the rest at its own time, not later
    clock.advance(due - clock.monotonic())
    assert plies(restarted.outputs.public_pgn()) == [7, 7]
    clock.advance(DELAY)
    assert plies(restarted.outputs.public_pgn()) == [20, 20]  # every ply the journal kept, before any resync


def test_the_delay_line_survives_a_reboot_through_the_wall_clock(tmp_path: Path) -> None:
    """After a reboot the monotonic clock starts again: what was public stays public, the rest comes at its
    wall-clock time."""
    clock = ManualClock(monotonic=50_000.0)
    t = delayed(tmp_path, boards=1)
    hub = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    b1 = Board(hub, "b01")
    b1.start()
    play(hub, clock, [b1], 10, 60.0)
    clock.advance(DELAY - 10 * 60 + 4 * 60 + 30)  # plies 1-5 (played at minutes 0 to 4) are public
    public = hub.outputs.public_pgn()
    assert plies(public) == [5]
    after_boot = ManualClock(wall=clock.wall() + 120, monotonic=12.0, boot="another boot")
    rebooted = Broadcaster(t, output_dir=tmp_path, clock=after_boot).open()
    assert plies(rebooted.outputs.public_pgn()) == [7]  # two minutes later, two more plies are due
    after_boot.advance(3 * 60)
    assert plies(rebooted.outputs.public_pgn()) == [10]
    # an hour's step back of the wall clock during the reboot takes nothing public back
    again = ManualClock(wall=after_boot.wall() - 3600, monotonic=5.0, boot="a third boot")
    assert plies(Broadcaster(t, output_dir=tmp_path, clock=again).open().outputs.public_pgn()) == [10]


def test_the_journal_is_rewritten_small_and_a_torn_line_is_ignored(tmp_path: Path) -> None:
    clock = ManualClock()
    t = delayed(tmp_path, boards=1)
    hub = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    b1 = Board(hub, "b01")
    b1.start()
    play(hub, clock, [b1], 20, 60.0)
    path = delay_path(tmp_path, 3)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["clock"]["boot"] == "manual"
    # each change holds only the moves after those of the line before it
    assert all(len(g["m"]) <= 1 for line in lines[2:] for g in json.loads(line)["g"])
    assert path.stat().st_mode & 0o777 == 0o600  # live moves: not for the public before their time
    with path.open("a") as fh:
        fh.write('{"t": 1, "b": 1, "g": [{"n"')  # a power cut in the middle of a line
    clock.advance(DELAY)
    restarted = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    assert plies(restarted.outputs.public_pgn()) == [20]
    # the file starts again with what the delay still needs: the public view only
    assert [json.loads(line).get("t") is not None for line in path.read_text().splitlines()] == \
        [False, True, False]  # the clocks, the change shown, when it was shown


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["move", "clock", "takeback", "result", "next game", "board"]),
                          st.integers(0, 10_000)), max_size=60))
def test_the_journal_gives_back_every_change(tmp_path: Path, steps: list[tuple[str, int]]) -> None:
    """Moves, clock times set after their move, takebacks, results, further games, two boards: read back
    change for change."""
    clock = ManualClock()
    path = tmp_path / f"j-{len(steps)}-{sum(n for _, n in steps)}.jsonl"
    path.unlink(missing_ok=True)
    journal = DelayJournal(path, clock)
    journal.rewrite({})
    games: dict[int, list[list[Any]]] = {1: [[chess.Board(), "*"]], 2: [[chess.Board(), "*"]]}
    clocks: dict[tuple[int, int], list[int | None]] = {}
    written: dict[int, list[tuple[float, tuple[GameSnapshot, ...]]]] = {}
    board = 1
    for what, n in steps:
        if what == "board":
            board = 3 - board
            continue
        game = games[board][-1]
        position, key = game[0], (board, len(games[board]))
        times = clocks.setdefault(key, [])
        legal = sorted(position.legal_moves, key=lambda m: m.uci())
        if what == "move" and legal:
            position.push(legal[n % len(legal)])
            times.append(None)
        elif what == "clock" and times:
            times[-1] = n
        elif what == "takeback" and position.move_stack:
            for _ in range(1 + n % min(3, len(position.move_stack))):
                position.pop()
                times.pop()
        elif what == "result":
            game[1] = ["1-0", "0-1", "1/2-1/2", "*"][n % 4]
        elif what == "next game":
            games[board].append([chess.Board(), "*"])
        snaps = []
        for number, (pos, result) in enumerate(games[board], start=1):
            replay, records = chess.Board(), []
            for move, ms in zip(pos.move_stack, clocks.get((board, number), []), strict=True):
                records.append(PlyRecord(move.uci(), replay.san(move), ms))
                replay.push(move)
            snaps.append(GameSnapshot(chess.STARTING_FEN, False, number, tuple(records), result,
                                      "arbiter" if result != "*" else None, None, None, number - 1))
        clock.advance(1.0)
        journal.append(board, clock.monotonic(), tuple(snaps))
        written.setdefault(board, []).append((clock.monotonic(), tuple(snaps)))
    journal.close()
    assert DelayJournal(path, clock).load(DELAY) == written


def test_a_journal_left_by_a_delay_turned_off_is_not_taken_later(tmp_path: Path) -> None:
    clock = ManualClock()
    hub = Broadcaster(delayed(tmp_path, boards=1), output_dir=tmp_path, clock=clock).open()
    b1 = Board(hub, "b01")
    b1.start()
    play(hub, clock, [b1], 2, 60.0)
    hub.storage.save_state()
    live = parse_tournament(tournament_data(1, out=tmp_path))  # the delay taken out of the file
    hub = Broadcaster(live, output_dir=tmp_path, clock=clock).open()
    b1.hub = hub
    play(hub, clock, [b1], 4, 60.0)
    hub.storage.save_state()
    assert not delay_path(tmp_path, 3).exists()
    again = Broadcaster(delayed(tmp_path, boards=1), output_dir=tmp_path, clock=clock).open()  # and put back
    clock.advance(DELAY)
    assert plies(again.outputs.public_pgn()) == [6]  # not the 2 plies of the old journal


def two_delayed_rounds(tmp_path: Path) -> Tournament:
    data = tournament_data(1, out=tmp_path)
    data["broadcast"]["delay_minutes"] = DELAY / 60
    r4 = json.loads(json.dumps(data["rounds"][0]))
    r4["number"] = 4
    data["rounds"].append(r4)
    return parse_tournament(data)


def test_a_round_left_early_keeps_its_delay(tmp_path: Path) -> None:
    """Switched away from at its end (the arbiter, or the schedule), a delayed round's last changes still wait
    for their time: over HTTP, in its file, after a restart. Before, they were public at the switch."""
    asyncio.run(_left_early(tmp_path))


async def _left_early(tmp_path: Path) -> None:
    clock = ManualClock()
    t = two_delayed_rounds(tmp_path)
    hub = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    b1 = Board(hub, "b01")
    b1.start()
    play(hub, clock, [b1], 6, 60.0)          # plies at minutes 0 to 5
    clock.advance(DELAY - 6 * 60 + 60 + 30)  # plies 1 and 2 are public
    assert plies(hub.outputs.public_pgn(3)) == [2]
    hub.switch_round(4)
    writer = asyncio.create_task(hub.outputs.run_writer())
    await asyncio.sleep(0.05)
    assert plies(hub.outputs.public_pgn(3)) == [2] and plies(hub.outputs.all_rounds_pgn())[0] == 2
    assert plies((tmp_path / "round-3.pgn").read_text()) == [2]
    assert [len(g.moves) for g in hub.storage.past_games(3)[1]] == [6]  # the arbiter's: not delayed
    restarted = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    assert restarted.storage.round.number == 4 and plies(restarted.outputs.public_pgn(3)) == [2]
    clock.advance(2 * 60)                    # two more plies fall due: the writer writes round 3's file again
    hub.storage.dirty.set()
    for _ in range(100):
        if plies((tmp_path / "round-3.pgn").read_text()) == [4]:
            break
        await asyncio.sleep(0.01)
    assert plies((tmp_path / "round-3.pgn").read_text()) == [4]
    clock.advance(DELAY)
    assert plies(restarted.outputs.public_pgn(3)) == [6] and plies(hub.outputs.public_pgn(3)) == [6]
    hub.storage.dirty.set()
    for _ in range(100):
        if plies((tmp_path / "round-3.pgn").read_text()) == [6]:
            break
        await asyncio.sleep(0.01)
    assert plies((tmp_path / "round-3.pgn").read_text()) == [6]  # and once more when everything is public
    assert hub.storage.delays.held_back(3) is None
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)


def test_the_journal_of_a_round_all_public_is_kept_small(tmp_path: Path) -> None:
    clock = ManualClock()
    t = two_delayed_rounds(tmp_path)
    hub = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    b1 = Board(hub, "b01")
    b1.start()
    play(hub, clock, [b1], 12, 10.0)
    hub.switch_round(4)
    clock.advance(DELAY)
    restarted = Broadcaster(t, output_dir=tmp_path, clock=clock).open()
    assert plies(restarted.outputs.public_pgn(3)) == [12]
    changes = [line for line in delay_path(tmp_path, 3).read_text().splitlines() if '"t"' in line]
    assert len(changes) == 1  # the board's last change only (it had 13)
    restarted.switch_round(3)  # and back: what was public is public
    assert plies(restarted.outputs.public_pgn(3)) == [12]
