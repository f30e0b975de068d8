"""The cluster demo as a test: 3 NATS nodes, 3 real bridges with firmware-simulated boards, a broadcaster;
the node of a bridge is killed by PID mid-round and restarted; the round PGN must hold every ply, once."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.e2e.helpers import REPO, require_binary


def test_cluster_demo_loses_nothing_when_a_node_dies() -> None:
    require_binary("nats-server", "/usr/sbin/nats-server")
    require_binary("micropython", str(REPO / ".venv" / "bin" / "micropython"))
    proc = subprocess.run([sys.executable, "-m", "touchmove.cli", "cluster-demo", "--plies", "30"],
                          capture_output=True, text=True, timeout=400, cwd=REPO)
    out = proc.stdout.strip()
    last = out.splitlines()[-1] if out else ""
    m = re.fullmatch(r"plies played (\d+), in the round PGN (\d+), plies lost: (\d+), duplicates: (\d+), "
                     r"node down for ([\d.]+) s", last)
    assert m, f"unexpected output:\n{out}\n{proc.stderr[-3000:]}"
    played, in_pgn, lost, dups, down = int(m[1]), int(m[2]), int(m[3]), int(m[4]), float(m[5])
    assert "killed node n1" in out and "back after" in out, out
    assert played > 100, out  # six games of up to 30 plies (a mate may end one early)
    assert (in_pgn, lost, dups) == (played, 0, 0), out
    assert down >= 6.0 and proc.returncode == 0, out
