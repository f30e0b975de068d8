"""The demo stall at ``--speed 20`` (issue 9): the simulated firmware scanned late and skipped square states a
real board reports, so a quick capture (victim lifted, capturing piece down 40 ms later) went unseen and the
game stopped. The sim now holds every change that a real board would see until enough scans have read it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import chess

from tests.e2e.helpers import REPO, Broker
from tests.e2e.rig import firmware_argv

DWELLS = [20, 30, 40, 60, 100]      # ms a piece rests on an empty square: a real board reports each of these
CHATTER = 3                          # ms: contact bounce, hidden by every board's debounce


def test_the_sped_up_sim_reports_every_change_a_real_board_sees_and_no_chatter(tmp_path: Path) -> None:
    recs, expected, t = [], [], 1000
    squares = iter(range(chess.A3, chess.H6 + 1))
    for _ in range(3):
        for dwell in [*DWELLS, CHATTER]:
            sq = chess.square_name(next(squares))
            recs += [{"t": t, "type": "place", "sq": sq}, {"t": t + dwell, "type": "lift", "sq": sq}]
            if dwell != CHATTER:
                expected += [("place", sq), ("lift", sq)]
            t += 400
    timeline = tmp_path / "dwell.jsonl"
    timeline.write_text("".join(json.dumps(r) + "\n" for r in recs))
    env = dict(os.environ, TOUCHMOVE_SIM=str(timeline), TOUCHMOVE_SIM_SPEED="50", TOUCHMOVE_SIM_EXIT="1",
               TOUCHMOVE_BOARD="dwell")
    out = subprocess.run(firmware_argv(), env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    msgs = [json.loads(line) for line in out.stdout.decode().splitlines()]
    got = [(m["type"], m["sq"]) for m in msgs if m["type"] in ("lift", "place")]
    assert got == expected          # at speed 50 a scan covers 50 ms or more: before the fix most were lost


def test_the_demo_at_speed_20_plays_the_whole_game(broker: Broker) -> None:
    out = subprocess.run([sys.executable, "-m", "touchmove.cli", "demo", "--no-ui", "--speed", "20", "--broker",
                          broker.url], cwd=REPO, capture_output=True, timeout=180)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    assert "17. Rd8# 1-0" in out.stdout.decode()
