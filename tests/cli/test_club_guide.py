"""docs/club.md, followed as written: its rehearsal's commands (taken from the page itself) bring ten
simulated boards through their bridges, a broker and the broadcaster to a local lichess-shaped round, and the
evidence and results steps run on what it left. Only the ports change (the test's own broker, free ports)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.conftest import REPO
from touchmove.sim.local_broker import LocalBroker, free_port

GUIDE = REPO / "docs" / "club.md"


def code_blocks(section: str) -> list[str]:
    """Return the indented code blocks of the guide's section whose title starts with ``section``."""
    text = GUIDE.read_text(encoding="utf-8")
    body = re.split(r"^## ", text, flags=re.M)
    part = next(p for p in body if p.startswith(section))
    blocks: list[str] = []
    current: list[str] = []
    for line in [*part.splitlines(), ""]:
        if line.startswith("    ") or (current and not line.strip() and not current[-1].endswith("EOF")):
            current.append(line[4:])
        elif current:
            blocks.append("\n".join(current).strip())
            current = []
    return [b for b in blocks if b]


def shell(command: str, cwd: Path, env: dict[str, str], **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, **kw)  # type: ignore[call-overload]


def test_the_rehearsal_runs_as_written(tmp_path: Path, broker: LocalBroker) -> None:
    blocks = code_blocks("The rehearsal")
    assert blocks[0].startswith("sudo apt-get install") and len(blocks) == 6
    http, standin = free_port(), free_port()

    def local(command: str) -> str:
        return (command.replace("127.0.0.1:1883", f"127.0.0.1:{broker.port}")
                .replace("port = 8080", f"port = {http}").replace("9000", str(standin)))

    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    made = subprocess.run(["bash", "-c", local(blocks[1])], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    work = tmp_path / "rehearsal"
    token = subprocess.run(["bash", "-c", blocks[2]], cwd=work, env=env, capture_output=True, text=True)
    assert token.returncode == 0 and len(token.stdout.strip()) >= 20, token.stderr
    servers = [shell(local(blocks[3]), work, env), shell(local(blocks[4]), work, env)]
    try:
        time.sleep(4)
        boards = subprocess.run(["bash", "-c", local(blocks[5])], cwd=work, env=env, capture_output=True,
                                text=True, timeout=600)
        assert boards.returncode == 0, boards.stderr
        time.sleep(4)     # the last push (the stand-in is pushed to at most every 2 s)
    finally:
        for proc in servers:
            os.killpg(proc.pid, signal.SIGTERM)
        outputs = [proc.communicate(timeout=30)[0] for proc in servers]
    pushed, broadcast = outputs
    assert "arbiters   1 arbiter account(s)" in broadcast and "Anna Chief (chief)" in broadcast
    assert f"pushing to http://127.0.0.1:{standin}/api/broadcast/round/rehears1/push" in broadcast
    assert "push to round rehears1: 10 games, 330 plies, 10 finished" in pushed, pushed[-2000:]
    for n in range(1, 11):
        log = (work / f"club-{n:02d}.log").read_text()
        assert "17. Rd8# 1-0" in log and "bad json" not in log and "Traceback" not in log
    round_pgn = (work / "broadcast" / "round-1.pgn").read_text()
    assert round_pgn.count("[Event ") == 10 and '[White "Sims, Sy"]' in round_pgn
    results = (work / "broadcast" / "round-1-results.csv").read_text().splitlines()
    assert len(results) == 11 and all(",1-0,board,checkmate" in row for row in results[1:])
    # 7. the evidence of a game, from its board's journal
    evidence = code_blocks("A game's evidence")
    assert len(evidence) == 1
    for line in evidence[0].splitlines():
        command = line.split("#")[0].strip()
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (command, done.stderr)
    exported = (work / "club-03.pgn").read_text()
    assert '"type":"move"' in done.stdout and exported.count("Rd8#") == 1
    # assign = true: the names reach the bridges that start after the broadcaster (issue 38: "?" before)
    assert '[White "Eyre, Ed"]' in exported and '[Black "Falk, Fay"]' in exported, exported[:400]
