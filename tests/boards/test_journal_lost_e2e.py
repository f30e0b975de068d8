"""The journal deleted while the bridge runs (issue 35), end to end: a DGT board's emulator on a pty, the real
bridge (``touchmove run``) and a private Mosquitto. The bridge notices within seconds (an error line and a
``journal_replaced`` alert), starts a new journal at the path from the lost one and the engine's state, and
every event it publishes afterwards is in it; the game is whole in it. The journal's ``.lock`` and ``-seqs``
files, deleted with it, are made again."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from tests.boards.rig import BoardRig
from tests.e2e.helpers import journal_moves
from touchmove.sim.demo import DEFAULT_PGN, read_game

OPERA = list(read_game(DEFAULT_PGN).mainline_moves())


def test_a_journal_deleted_while_the_bridge_runs_is_started_again(tmp_path: Path) -> None:
    want = [m.uci() for m in OPERA]
    with BoardRig(tmp_path, "dgt", OPERA, speed=5) as rig:
        assert rig.sub is not None
        rig.wait_game(want[:8], timeout=60)
        for name in os.listdir(tmp_path):
            if name.startswith("journal.sqlite3"):         # its .lock and -seqs too
                os.unlink(tmp_path / name)
        gone = time.monotonic()
        rig.sub.wait_for(lambda: "journal_replaced" in rig.alerts(), 10, "the journal_replaced alert")
        noticed = time.monotonic() - gone
        assert rig.journal.exists()
        sides = [Path(f"{rig.journal}{side}") for side in (".lock", "-seqs")]
        assert all(p.exists() for p in sides), sides        # made again with the journal, before the alert
        rig.wait_game(want, timeout=120)
        time.sleep(1.0)
        rig.stop_daemon()
        published = {int(e["seq"]) for e in rig.events() if isinstance(e.get("seq"), int)}  # type: ignore[call-overload]
    assert noticed < 5.0
    assert "ERROR" in rig.log() and "was deleted or moved while the bridge ran" in rig.log()
    alert = next(e for e in rig.events() if e.get("code") == "journal_replaced")
    with sqlite3.connect(rig.journal) as db:
        journaled = {seq for (seq,) in db.execute("SELECT seq FROM events WHERE board = ?", (rig.board_id,))}
    after = {seq for seq in published if seq >= int(alert["seq"])}  # type: ignore[call-overload]
    assert after and after <= journaled, sorted(after - journaled)[:10]
    assert journal_moves(rig.journal, rig.board_id) == want
    assert json.loads(json.dumps(alert["detail"]))["copied"] is True  # type: ignore[index]
