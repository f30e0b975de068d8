"""Programs organisers already use, reading touchmove's outputs (issue 36): Debian's ``pgn-extract`` on round
PGNs, the PyPI ``trf`` package on ``results.trf``, the PyPI ``pairing-core`` Swiss engine (Dutch system)
pairing the next round from it. Installed by ``make system-deps`` (pgn-extract) and the ``test`` extra."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import chess.pgn
import pytest

from tests.broadcast.broadcast_helpers import read_games
from tests.conftest import REQUIRE_ALL

COMMENT = re.compile(r"\{[^}]*\}")
MOVE_NUMBER = re.compile(r"\d+\.(\.\.)?")


def pgn_extract() -> str:
    """The pgn-extract program (Debian installs it in /usr/games); skipped (failed in CI) when missing."""
    found = shutil.which("pgn-extract") or ("/usr/games/pgn-extract" if Path("/usr/games/pgn-extract").exists()
                                            else None)
    if found is None:
        if REQUIRE_ALL:
            pytest.fail("pgn-extract is not installed (TOUCHMOVE_REQUIRE_ALL=1): run `make system-deps`")
        pytest.skip("pgn-extract is not installed: `make system-deps` (apt-get install pgn-extract)")
    return found


def _tokens(game: chess.pgn.Game) -> list[str]:
    """The movetext's SAN tokens and the result, as written (comments and move numbers left out)."""
    text = str(game).split("\n\n", 1)[-1] if game.headers else str(game)
    return MOVE_NUMBER.sub(" ", COMMENT.sub(" ", text)).split()


def check_with_pgn_extract(path: Path) -> None:
    """pgn-extract reads the PGN file with no error; the SAN it regenerates is ours token for token, and
    every game's Result tag is its movetext's result (and a mate on the board the winner's)."""
    text = path.read_text(encoding="utf-8")
    ours = read_games(text, check=False)
    out = path.with_name(path.name + ".pgn-extract")
    run = subprocess.run([pgn_extract(), "-s", "-Wsan", "-o", str(out), str(path)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0 and not run.stderr.strip(), f"pgn-extract on {path}: {run.stderr[-2000:]}"
    theirs = read_games(out.read_text(encoding="utf-8"), check=False)
    out.unlink()
    assert len(theirs) == len(ours), f"pgn-extract read {len(theirs)} of the {len(ours)} games of {path}"
    for mine, read in zip(ours, theirs, strict=True):
        assert not mine.errors and _tokens(read) == _tokens(mine), (path, mine.headers.get("Round"))
        result = mine.headers.get("Result", "*")
        assert _tokens(mine)[-1] == result, (path, mine.headers.get("Round"), result)
        board = mine.end().board()
        if board.is_checkmate():
            assert result == ("0-1" if board.turn == chess.WHITE else "1-0"), (path, mine.headers.get("Round"))
