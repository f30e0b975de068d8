"""The cluster demo as a test: 3 NATS nodes, 3 real bridges with firmware-simulated boards (events at QoS 0, the
broadcaster with an events' standby), a broadcaster; a node is killed by PID mid-round (a bridge's, the
broadcaster's, the QoS 1 stream's leader, the meta leader) and restarted; plies played, published by the bridges
and in the round PGN must be the same, each once."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.e2e.helpers import REPO, require_binary

LAST = re.compile(r"plies played (\d+), in the round PGN (\d+), plies lost: (\d+), duplicates: (\d+), "
                  r"node down for ([\d.]+) s")


WHOSE = {"bridge": "the node of bridge hall-a", "broadcaster": "the node of the broadcaster",
         "stream-leader": "the QoS 1 stream's leader", "meta-leader": "JetStream's meta leader"}
PUBLISHED = re.compile(r"plies published by the bridges \(journaled events\) (\d+)")


@pytest.mark.parametrize("victim, plies", [("bridge", 30), ("broadcaster", 20), ("stream-leader", 20),
                                           ("meta-leader", 20)])
def test_cluster_demo_loses_nothing_when_a_node_dies(victim: str, plies: int) -> None:
    require_binary("nats-server", "/usr/sbin/nats-server")
    require_binary("micropython", str(REPO / ".venv" / "bin" / "micropython"))
    proc = subprocess.run([sys.executable, "-m", "touchmove.cli", "cluster-demo", "--plies", str(plies),
                           "--kill-node-of", victim], capture_output=True, text=True, timeout=400, cwd=REPO)
    out = proc.stdout.strip()
    m = LAST.fullmatch(out.splitlines()[-1] if out else "")
    assert m, f"unexpected output:\n{out}\n{proc.stderr[-3000:]}"
    played, in_pgn, lost, dups, down = int(m[1]), int(m[2]), int(m[3]), int(m[4]), float(m[5])
    assert WHOSE[victim] in out, out
    published = PUBLISHED.search(out)
    assert published and int(published[1]) == played, out
    assert "back after" in out, out
    assert played > 3 * plies, out  # six games of up to `plies` plies (a mate may end one early)
    assert (in_pgn, lost, dups) == (played, 0, 0), out
    assert down >= 6.0 and proc.returncode == 0, out
