"""Helpers of the broadcast tests (a module with a unique name, imported by the tests)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REQUIRE_ALL
from touchmove.broadcast.tournament import Tournament, parse_tournament


def tournament_data(boards: int = 3, *, round_number: int = 3, port: int = 1883,
                    base: str = "touchmove", out: Path | None = None) -> dict[str, Any]:
    pairings = []
    for n in range(1, boards + 1):
        pairings.append({
            "board": n, "board_id": f"b{n:02d}",
            "white": {"name": f"White, Player {n}", "fide_id": 1000 + n, "title": "GM" if n == 1 else "",
                      "elo": 2500 - n},
            "black": {"name": f"Black, Player {n}", "fide_id": 2000 + n, "elo": 2400 - n},
        })
    return {
        "event": "Test Open", "site": "Testville", "time_control": "180+2", "round": round_number,
        "broadcast": {"output_dir": str(out or "out"), "port": 0, "token": "s3cret"},
        "brokers": [{"url": f"mqtt://127.0.0.1:{port}", "bases": [base]}],
        "rounds": [{"number": round_number, "date": "2026-11-29", "boards": pairings}],
    }


def make_tournament(boards: int = 3, **kwargs: Any) -> Tournament:
    return parse_tournament(tournament_data(boards, **kwargs))


def chromium_path() -> str:
    path = os.environ.get("TOUCHMOVE_CHROMIUM", "/usr/bin/chromium")
    if not (os.path.exists(path) or shutil.which(path)):
        if REQUIRE_ALL:
            pytest.fail(f"Chromium not found at {path} (TOUCHMOVE_REQUIRE_ALL=1): run `make system-deps`")
        pytest.skip(f"Chromium not found at {path}: `make system-deps` (apt-get install chromium)")
    return path
