"""``touchmove demo --board dgt|chesslink|chessnut``: the game played by the hand model on a vendor board's
emulator, on a pseudo-terminal the bridge opens with that board's protocol."""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from pathlib import Path

import chess.pgn

from touchmove.config import BoardPort
from touchmove.sim import timeline
from touchmove.sim.pieces import piece_timeline
from touchmove.sim.ptyboard import PtyBoard

#: The ids the emulated boards get in the bridge (DGT's from its serial number, the others from the port).
BOARD_IDS = {"dgt": "dgt-12345", "chesslink": "chesslink-board0", "chessnut": "chessnut-board0"}
BOARDS = ("touchmove", *BOARD_IDS)


@dataclass(frozen=True)
class VendorBoard:
    """An emulated vendor board for the demo: its process on a pty, its id, the bridge's port entry."""

    pty: PtyBoard
    board_id: str
    ports: tuple[BoardPort, ...]
    last_t: int


def vendor_board(protocol: str, game: chess.pgn.GameNode, workdir: Path, speed: int, seed: int = 1858
                 ) -> VendorBoard:
    """Return the emulator of ``protocol`` playing ``game`` (not started), behind ``workdir/board0``."""
    start = game.board()
    events = piece_timeline(start, list(game.mainline_moves()), random.Random(seed))
    path = timeline.write(workdir / "pieces.jsonl", events)
    module = ["touchmove.sim.dgt"] if protocol == "dgt" else ["touchmove.sim.scanning", protocol]
    argv = [sys.executable, "-m", *module, str(path), "--speed", str(speed), "--start", start.fen()]
    link = str(workdir / "board0")
    return VendorBoard(PtyBoard(argv, link), BOARD_IDS[protocol],
                       (BoardPort(protocol, port=link, rate=float(speed)),), max(e.t for e in events))
