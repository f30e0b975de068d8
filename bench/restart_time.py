"""Restart benchmark (a script, not a test): how long `touchmove run` takes to resume from its journal after a
long event, with the engine checkpoints and without them (the whole journal replayed, as before).

    .venv/bin/python bench/restart_time.py [--boards 500] [--rounds 3]

A journal is written the way the bridge writes it: every board plays ``--rounds`` games (real games from
../shared/data/games, or the Opera game, by the hands model; the board is cleared and set up between rounds),
each record and each settle-time ``advance`` journaled with the events it gave, and a signed checkpoint at every
game end and every CHECKPOINT_EVERY entries (bridge/daemon.py; the key is one made for the run). Then a fresh bridge
restores every board from it, the way a restart does (each checkpoint's signature verified before it is
unpickled), and the restored engines are checked against the ones that wrote the journal. Restart time is wall
time for ``bridge.pipeline.restore()`` (the machine is shared: compare the two figures, not absolute values).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import chess
from figures import Run

from touchmove import records
from touchmove.bridge import CHECKPOINT_EVERY, Bridge, checkpoint
from touchmove.bridge.journal import Journal
from touchmove.config import BridgeConfig
from touchmove.rules import Engine
from touchmove.sim.hands import Hands, Style, play_session, playable_moves, read_games

REPO = Path(__file__).resolve().parents[1]
GAMES_DIR = REPO.parent / "shared" / "data" / "games"
OPERA = REPO / "host" / "touchmove" / "data" / "opera-1858.pgn"
SETTLE_MS = 200


def games() -> list[list[chess.Move]]:
    """Standard-start games to play (the shared games, else the Opera game)."""
    paths = sorted(GAMES_DIR.glob("*.pgn")) or [OPERA]
    out = []
    for path in paths:
        for game in read_games(str(path)):
            moves = playable_moves(game)
            if moves and game.board().fen() == chess.STARTING_FEN:
                out.append(moves)
    return out


def write_board(journal: Journal, board: str, session: list[list[chess.Move]], seed: int,
                key: checkpoint.CheckpointKey) -> Engine:
    """Journal one board's session as the bridge would; return its engine."""
    hands = Hands(random.Random(seed), Style(), t=1000)
    play_session([(chess.Board(), moves) for moves in session], hands)
    engine = Engine(settle_ms=SETTLE_MS)
    journal.ensure_board(board)
    seq = since = 0
    ts = "2026-01-01T00:00:00.000Z"
    code = checkpoint.fingerprint()

    def save(t: int) -> None:
        state = checkpoint.dump(engine)
        after = journal.last_entry_id
        journal.add_checkpoint(board, seq, t, code, state, {}, ts, settle_ms=SETTLE_MS, after_entry=after,
                               mac=key.sign(board, code, SETTLE_MS, seq, state, after, {}))

    def emit(events: list) -> bool:
        nonlocal seq
        ended = False
        for event in events:
            seq += 1
            payload = event.to_dict()
            payload.update(board=board, seq=seq, session="bench", ts=ts)
            journal.add_event(board, seq, payload)
            ended = ended or event.type == "game_end"
        return ended

    for rec in hands.records:
        deadline = engine.next_deadline()
        while deadline is not None and deadline <= rec.t:
            journal.add_entry(board, "advance", deadline, None, "timer", ts)
            since += 1
            ended = emit(engine.advance(deadline))
            if ended or since >= CHECKPOINT_EVERY:
                save(deadline)
                since = 0
            nxt = engine.next_deadline()
            deadline = nxt if nxt is not None and nxt > deadline else None
        journal.add_entry(board, "record", rec.t, records.to_line(rec), "serial", ts)
        since += 1
        if emit(engine.feed(rec)) or since >= CHECKPOINT_EVERY:
            save(rec.t)
            since = 0
        if journal.held >= 5000:
            journal.commit()
    journal.update_board(board, boot="bench", last_seq=0, t_offset=0, last_t=hands.t)
    journal.mark_published(board, seq)
    journal.commit()
    return engine


def restore_time(path: Path, key: Path) -> tuple[float, Bridge]:
    async def run() -> tuple[float, Bridge]:
        bridge = Bridge(BridgeConfig(settle_ms=SETTLE_MS, journal=str(path), checkpoint_key=str(key)),
                        session="bench")
        bridge.open()
        bridge.pipeline.loop = asyncio.get_running_loop()
        start = time.perf_counter()
        bridge.pipeline.restore()
        elapsed = time.perf_counter() - start
        bridge.pipeline.journal_lock.release()      # the next restore of this journal is another bridge's
        return elapsed, bridge
    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    fig = Run("restart_time")
    pool = games()
    rng = random.Random(9)
    work = Path(tempfile.mkdtemp(prefix="touchmove-restart-"))
    key_file = work / "key" / "checkpoint.key"        # this run's own checkpoint key
    key = checkpoint.ensure_key(key_file)
    try:
        figures = []
        engines: dict[str, Engine] = {}
        sessions = {f"board{b:03d}": [rng.choice(pool) for _ in range(args.rounds)] for b in range(args.boards)}
        for rounds in sorted({1, args.rounds}):
            path = work / f"journal-{rounds}.sqlite3"
            journal = Journal.open(path)
            start = time.perf_counter()
            for i, (board, session) in enumerate(sessions.items()):
                engines[board] = write_board(journal, board, session[:rounds], seed=i, key=key)
            written = time.perf_counter() - start
            entries = journal.db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            events = journal.db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
            journal.close()
            with_cp, bridge = restore_time(path, key_file)
            for board, engine in engines.items():
                if bridge.boards[board].engine.state() != engine.state():
                    sys.exit(f"{board}: the restored engine differs from the one that wrote the journal")
            bare = work / f"bare-{rounds}.sqlite3"
            shutil.copy(path, bare)
            with sqlite3.connect(bare) as db:
                db.execute("DELETE FROM checkpoints")
            without_cp, bridge = restore_time(bare, key_file)
            for board, engine in engines.items():
                if bridge.boards[board].engine.state() != engine.state():
                    sys.exit(f"{board}: the full replay differs from the engine that wrote the journal")
            games_played = sum(len(e.games) for e in engines.values())
            figures.append({"boards": args.boards, "rounds": rounds, "games": games_played, "entries": entries,
                            "events": events, "journal_mb": round(path.stat().st_size / 1e6, 1),
                            "write_s": round(written, 1), "restart_s_checkpoints": round(with_cp, 2),
                            "restart_s_full_replay": round(without_cp, 2)})
            print(json.dumps(figures[-1]), flush=True)
            row = f"{rounds} round{'s' if rounds > 1 else ''} of {args.boards} boards"
            fig.add("games", games_played, group=row)
            fig.add("journal entries", entries, group=row)
            fig.add("journal", figures[-1]["journal_mb"], "MB", group=row)
            fig.add("restart, checkpoints", figures[-1]["restart_s_checkpoints"], "s", group=row)
            fig.add("restart, whole journal", figures[-1]["restart_s_full_replay"], "s", group=row)
        first, last = figures[0], figures[-1]
        print(f"restart after {last['rounds']} round(s) of {last['boards']} boards: {last['restart_s_checkpoints']} s "
              f"from checkpoints (after 1 round: {first['restart_s_checkpoints']} s), "
              f"{last['restart_s_full_replay']} s replaying every journal (after 1 round: "
              f"{first['restart_s_full_replay']} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fig.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
