"""``touchmove export``: a board's recording (the replay format) and its games as PGN, from the journal.

The recording holds every record the board's engine was fed (serial and operator commands) on the board's
monotonic time, so ``touchmove replay`` on it gives the same games, for arbiter review.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sqlite3
import sys
from pathlib import Path

import chess.pgn

from touchmove.bridge import checkpoint
from touchmove.bridge.journal import Journal

log = logging.getLogger(__name__)


def recording_lines(journal: Journal, board: str) -> list[str]:
    """Return the board's records as JSON lines (advance calls and metadata are not records)."""
    return [e.body for e in journal.entries(board) if e.kind == "record" and e.body]


def recording_gaps(journal: Journal, board: str) -> int:
    """Return how many records the bridge could not journal (a full disk past its bound; see docs/bridge.md)."""
    return sum(json.loads(e.body).get("records_not_journaled", 0) for e in journal.entries(board)
               if e.kind == "gap" and e.body)


def reader_key() -> checkpoint.CheckpointKey | None:
    """Return this installation's checkpoint key if there is one (never made here: a new key verifies nothing)."""
    path = checkpoint.key_path()
    try:
        return checkpoint.find_key(path)
    except checkpoint.CheckpointKeyError as exc:
        log.warning("%s; checkpoints are not used (every journal is replayed)", exc)
        return None


def checkpoint_verified(journal: Journal, board: str, key: checkpoint.CheckpointKey | None) -> bool:
    """Return whether the board's latest checkpoint carries ``key``'s signature (nothing is unpickled)."""
    cp = journal.checkpoint(board)
    return (key is not None and cp is not None and cp.settle_ms is not None
            and key.verify(board, cp.code, cp.settle_ms, cp.event_seq, cp.state, cp.mac, cp.after_entry, cp.headers))


def pgn_games(journal: Journal, board: str, settle_ms: int | None = None, *,
              key: checkpoint.CheckpointKey | None = None) -> list[chess.pgn.Game]:
    """Return the board's games; ``settle_ms`` None means the bridge's (from its checkpoint, else 200). The
    checkpoint is used only when ``key`` (default: this installation's, :func:`reader_key`) verifies it; else
    every entry is replayed."""
    from touchmove.bridge.replay import replay_entries

    engine, _, headers = replay_entries(journal, board, settle_ms, key=key or reader_key())
    base = {"Event": "touchmove", "Site": board, **headers}
    return [game.pgn(dict(base)) for game in engine.games]


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
    else:
        Path(path).write_text(text, encoding="utf-8")


JOURNAL_TABLES = {"boards", "entries", "events"}


def journal_problem(path: str) -> str | None:
    """Return why ``path`` is not a bridge journal (read-only look: nothing is created), or None."""
    if not Path(path).is_file():
        return f"no journal at {path}"
    try:
        with contextlib.closing(sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        return f"{path} is not a touchmove journal ({exc})"
    if not JOURNAL_TABLES.issubset(tables):
        return f"{path} is not a touchmove journal (an SQLite file without its tables)"
    return None


def export_command(args: argparse.Namespace) -> int:
    problem = journal_problem(args.journal)
    if problem is not None:
        print(f"touchmove export: {problem}", file=sys.stderr)
        return 2
    journal = Journal.open(args.journal)
    try:
        boards = [row.board for row in journal.boards()]
        board = args.board
        if board is None:
            if len(boards) != 1:
                print("touchmove export: give --board, one of: " + (", ".join(boards) or "(none)"),
                      file=sys.stderr)
                return 2
            board = boards[0]
        if board not in boards:
            print(f"touchmove export: no board {board!r} in the journal; boards: {', '.join(boards)}",
                  file=sys.stderr)
            return 2
        recording = args.recording or f"{board}.jsonl"
        pgn = args.pgn or f"{board}.pgn"
        _write(recording, "".join(line + "\n" for line in recording_lines(journal, board)))
        key = reader_key()
        games = pgn_games(journal, board, args.settle_ms, key=key)
        _write(pgn, "".join(str(game) + "\n\n" for game in games))
        if recording != "-" and pgn != "-":
            print(f"{board}: {recording} ({len(games)} game(s)), {pgn}")
        missing = recording_gaps(journal, board)
        if missing:
            complete = ("the PGN is complete" if checkpoint_verified(journal, board, key) else
                        "the PGN may lack those moves: they are in the bridge's checkpoint, which only the "
                        f"bridge's checkpoint key ({checkpoint.KEY_ENV}) can vouch for")
            print(f"touchmove export: note: {missing} record(s) of {board} were never journaled (the journal could "
                  f"not write); the recording has gaps there, {complete}", file=sys.stderr)
        return 0
    finally:
        journal.close()


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("journal", metavar="JOURNAL", help="the bridge's journal (SQLite file)")
    parser.add_argument("--board", help="board id (may be omitted when the journal has one board)")
    parser.add_argument("--recording", metavar="FILE", help="recording output (default BOARD.jsonl; - = stdout)")
    parser.add_argument("--pgn", metavar="FILE", help="PGN output (default BOARD.pgn; - = stdout)")
    parser.add_argument("--settle-ms", type=int, default=None,
                        help="the settle time the bridge ran with (default: the one in the journal's checkpoint, "
                             "else 200)")
    parser.set_defaults(handler=export_command)
