"""Helpers of the broadcast tests (a module with a unique name, imported by the tests)."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chess.pgn
import pytest

import touchmove
from tests.conftest import REQUIRE_ALL
from tests.e2e.helpers import REPO, Broker, start_daemon, write_config, write_timeline
from touchmove.broadcast.tournament import Tournament, parse_tournament
from touchmove.sim.ptyboard import PtyBoard

#: The code under test, for the processes too (the tree first on their PYTHONPATH).
HOST = Path(touchmove.__file__).resolve().parents[1]

#: The CPython stand-in board the halls plug (protocol v1 on stdin/stdout, playing a timeline).
FAKE_BOARD = REPO / "tests" / "e2e" / "fake_board.py"


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


async def start_broadcaster(cfg: Path, port: int, log: Path | None = None,
                            env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    """Return a ``touchmove broadcast`` process on ``cfg`` (run in its folder) serving HTTP on ``port``, no arbiter
    token in its environment (``env``: more variables), its output to ``log`` (else dropped)."""
    variables = {**os.environ, "TOUCHMOVE_ARBITER_TOKEN": "", "PYTHONPATH": str(HOST), **(env or {})}
    argv = [sys.executable, "-m", "touchmove.cli", "broadcast", "--config", str(cfg), "--port", str(port)]
    if log is None:
        return await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.DEVNULL, env=variables, cwd=cfg.parent)
    with log.open("w") as out:
        return await asyncio.create_subprocess_exec(*argv, stdout=out, stderr=asyncio.subprocess.STDOUT,
                                                    env=variables, cwd=cfg.parent)


async def wait_seen(http: Any, port: int, proc: asyncio.subprocess.Process, bridge: str = "touchmove",
                    timeout: float = 30.0) -> None:
    """Return once the broadcaster process on ``port`` has read bridge ``bridge`` online (its retained state):
    it serves HTTP before it is subscribed, and a game started before that is not followed live (its start is
    lost to it, the game later seen already played). ``http`` is an ``aiohttp.ClientSession``; fail if ``proc``
    ends or ``timeout`` passes."""
    import aiohttp  # only the process tests need it

    deadline = time.monotonic() + timeout
    while True:
        try:
            async with http.get(f"http://127.0.0.1:{port}/status.json") as resp:
                if resp.status == 200 and (await resp.json())["bridges"].get(bridge) == "online":
                    return
        except aiohttp.ClientError:
            pass  # not serving yet
        assert time.monotonic() < deadline and proc.returncode is None, "the broadcaster did not read the bridge"
        await asyncio.sleep(0.1)


def read_games(text: str, *, check: bool = True) -> list[chess.pgn.Game]:
    """Return every game of a PGN text (``check``: asserting that python-chess read each without errors)."""
    stream = io.StringIO(text)
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not (check and game.errors), game.errors
        games.append(game)
    return games


def plies(text: str) -> list[int]:
    """Return each game's number of plies in a PGN text (read as :func:`read_games` reads it)."""
    return [len(list(game.mainline_moves())) for game in read_games(text)]


async def until(predicate: Callable[[], bool], timeout: float, what: str, tail: Callable[[], str]) -> None:
    """Return once ``predicate`` holds; fail after ``timeout`` seconds naming ``what``, with ``tail()`` (a log's
    end)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{tail()}"
        await asyncio.sleep(0.1)


class Hall:
    """A real Mosquitto, stand-in boards (``fake_board.py`` behind pseudo-terminals: ``fake<n>`` on ``board<n>``)
    and the ``touchmove run`` daemons serving them; :meth:`close` (or leaving the ``with``) stops the daemons,
    then the boards, then the broker."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.broker = Broker(tmp_path)
        self.broker.start()
        self.port = self.broker.port
        self.boards: list[PtyBoard] = []
        self.daemons: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Hall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tournament_data(self, boards: int, **kwargs: Any) -> dict[str, Any]:
        """:func:`tournament_data` on this hall's broker (results to ``out`` unless told), its first boards
        the stand-in boards plugged so far (``fake1``, ...)."""
        data = tournament_data(boards, port=self.port, **{"out": self.tmp_path / "out", **kwargs})
        for i, row in enumerate(data["rounds"][0]["boards"][:len(self.boards)], start=1):
            row["board_id"] = f"fake{i}"
        return data

    def tournament(self, boards: int, delay_minutes: float | None = None) -> Tournament:
        """The tournament of :meth:`tournament_data`, with a broadcast delay if given."""
        data = self.tournament_data(boards)
        if delay_minutes is not None:
            data["broadcast"]["delay_minutes"] = delay_minutes
        return parse_tournament(data)

    def plug(self, recs: list[dict[str, Any]]) -> PtyBoard:
        """Return the next stand-in board (``fake<n>`` on ``board<n>``) playing ``recs`` at speed 4, plugged
        (not started)."""
        n = len(self.boards) + 1
        timeline = write_timeline(self.tmp_path / f"t{n}.jsonl", recs)
        board = PtyBoard([sys.executable, str(FAKE_BOARD), str(timeline), f"fake{n}", "--speed", "4"],
                         str(self.tmp_path / f"board{n}"))
        board.plug()
        self.boards.append(board)
        return board

    def start_bridge(self, name: str) -> subprocess.Popen[bytes]:
        """Return a ``touchmove run`` on the boards' ports with its own journal ``<name>.sqlite3`` and log
        ``<name>.log`` (settle 150 ms)."""
        cfg = write_config(self.tmp_path / f"{name}.toml", broker_port=self.port,
                           ports=[str(self.tmp_path / "board*")], journal=self.tmp_path / f"{name}.sqlite3",
                           settle_ms=150)
        daemon = start_daemon(cfg, self.tmp_path / f"{name}.log")
        self.daemons.append(daemon)
        return daemon

    def log_tail(self, name: str) -> str:
        """Return the end of the log of the bridge started as ``name``."""
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")[-3000:]

    def close(self) -> None:
        try:
            for daemon in self.daemons:
                if daemon.poll() is None:
                    daemon.terminate()
                daemon.wait(10)
            for board in self.boards:
                board.stop()
        finally:
            self.broker.stop()
