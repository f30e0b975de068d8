"""Engine checkpoints are pickles: a journal from anywhere else must never run code (issue 9, security).

A bridge plays the Opera game into a journal with a settle time that is not the default; then the journal's
checkpoint is replaced by a pickle whose ``__reduce__`` writes a marker file, or copied to another machine (another
checkpoint key). The bridge's restore and ``touchmove export`` must not unpickle it (no marker) and must give the
game back exactly, by replaying the board's records."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pickle
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import chess.pgn
import pytest

from tests.e2e.helpers import OPERA, REPO, game_moves, simple_timeline
from tests.host.running_bridges import open_bridge
from touchmove.bridge import Bridge, checkpoint, replay_entries
from touchmove.bridge.journal import Journal
from touchmove.config import BridgeConfig, MqttConfig, SerialConfig
from touchmove.export import pgn_games

MOVES = game_moves(OPERA)
WANT = [m.uci() for m in MOVES]
SETTLE_MS = 150          # not the default 200: a replay must find it outside the (untrusted) pickle


class Link:
    """A stand-in serial link (no port)."""

    def __init__(self) -> None:
        self.path = self.key = "/dev/fake0"
        self.board: str | None = None
        self.held_back: str | None = None

    def send(self, cmd: dict[str, Any]) -> bool:
        return True

    def close(self) -> None:
        pass


class Payload:
    """Unpickling this writes a file: what an attacker's checkpoint would do (anything the user may)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


def new_bridge(journal: Path, loop: asyncio.AbstractEventLoop, key: Path | None = None) -> Bridge:
    """A bridge on ``journal``; one made before on it is taken as gone (its journal lock released)."""
    cfg = BridgeConfig(MqttConfig(), SerialConfig(), settle_ms=SETTLE_MS, journal=str(journal),
                       checkpoint_key=str(key) if key else None)
    return open_bridge(cfg, loop)


def play_opera(journal: Path, loop: asyncio.AbstractEventLoop) -> Any:
    """Play the whole game into ``journal`` (checkpointed at its end and at shutdown); return the engine state."""
    bridge = new_bridge(journal, loop)
    link = Link()
    lines = [json.dumps({"seq": 0, "t": 5, "type": "hello", "proto": 1, "fw": "x", "board": "brd", "boot": "b1"}),
             json.dumps({"seq": 1, "t": 6, "type": "snapshot", "occ": "ffff00000000ffff"})]
    lines += [json.dumps({"seq": i + 2, **rec}) for i, rec in enumerate(simple_timeline(MOVES, think=700, hand=150))]
    bridge.ports.handle_lines(link, [line.encode() for line in lines])  # type: ignore[arg-type]
    loop.run_until_complete(asyncio.sleep(0.4))
    sess = bridge.boards["brd"]
    assert [m.uci() for m in sess.engine.games[-1].moves] == WANT and sess.engine.state().game_over
    bridge.pipeline.checkpoint(sess)
    bridge.pipeline.flush()
    state = sess.engine.state()
    bridge.pipeline.journal.close()
    cp = Journal.open(journal).checkpoint("brd")
    assert cp is not None and cp.mac and cp.settle_ms == SETTLE_MS      # signed, settle time in a plain column
    return state


def plant(journal: Path, state: bytes, mac: str | None) -> None:
    with sqlite3.connect(journal) as db:
        assert db.execute("UPDATE checkpoints SET state = ?, mac = ? WHERE board = 'brd'", (state, mac)).rowcount == 1


def export(journal: Path, out: Path, env: dict[str, str] | None = None) -> tuple[list[str], str]:
    pgn = out / "brd.pgn"
    done = subprocess.run([sys.executable, "-m", "touchmove.cli", "export", str(journal), "--board", "brd",
                           "--pgn", str(pgn), "--recording", str(out / "brd.jsonl")], cwd=REPO, capture_output=True,
                          timeout=120, env=env, text=True)
    assert done.returncode == 0, done.stderr
    with open(pgn) as fh:
        game = chess.pgn.read_game(fh)
    assert game is not None
    return [m.uci() for m in game.mainline_moves()], done.stderr


@pytest.mark.parametrize("forged_mac", ["none", "genuine", "other_key"])
def test_a_malicious_checkpoint_is_never_unpickled_and_the_game_comes_back_by_replay(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture, forged_mac: str) -> None:
    journal = tmp_path / "j.sqlite3"
    state = play_opera(journal, loop)
    marker = tmp_path / "pwned"
    evil = pickle.dumps(Payload(marker))
    pickle.loads(evil)                       # the payload works: unpickled, it writes the marker
    assert marker.exists()
    marker.unlink()
    genuine = Journal.open(journal).checkpoint("brd")
    assert genuine is not None
    other = checkpoint.CheckpointKey(os.urandom(32), "elsewhere")
    mac = {"none": None, "genuine": genuine.mac,
           "other_key": other.sign("brd", genuine.code, SETTLE_MS, genuine.event_seq, evil)}[forged_mac]
    plant(journal, evil, mac)

    with caplog.at_level(logging.INFO):
        again = new_bridge(journal, loop)
        again.pipeline.restore()
    assert not marker.exists()
    assert again.boards["brd"].engine.state() == state
    assert [m.uci() for m in again.boards["brd"].engine.games[-1].moves] == WANT
    ignored = [r.getMessage() for r in caplog.records if "checkpoint ignored" in r.getMessage()]
    assert len(ignored) == 1 and "replaying the whole journal" in ignored[0]
    again.pipeline.journal.close()

    plant(journal, evil, mac)                # (the restart above wrote nothing; plant again all the same)
    moves, stderr = export(journal, tmp_path)
    assert not marker.exists() and moves == WANT
    assert "checkpoint ignored" in stderr
    assert [m.uci() for m in pgn_games(Journal.open(journal), "brd")[0].mainline_moves()] == WANT
    assert not marker.exists()


def test_a_journal_copied_to_another_machine_restores_and_exports_by_replay(
        tmp_path: Path, loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture) -> None:
    journal = tmp_path / "j.sqlite3"
    state = play_opera(journal, loop)
    copy = tmp_path / "elsewhere" / "j.sqlite3"
    copy.parent.mkdir()
    shutil.copy(journal, copy)
    other_key = tmp_path / "elsewhere" / "state" / "checkpoint.key"
    with caplog.at_level(logging.INFO):
        there = new_bridge(copy, loop, key=other_key)
        there.pipeline.restore()
    assert other_key.exists()
    assert there.boards["brd"].engine.state() == state        # replayed with the settle time of the column
    assert any("signature does not match" in r.getMessage() for r in caplog.records)
    there.pipeline.journal.close()
    # export there (its own key), and by someone with no key at all: the same game, the bridge's settle time
    for env_key in (other_key, tmp_path / "nokey" / "checkpoint.key"):
        moves, _ = export(copy, copy.parent, env=dict(os.environ, TOUCHMOVE_CHECKPOINT_KEY=str(env_key)))
        assert moves == WANT
    assert not (tmp_path / "nokey").exists()                  # a reader never makes a key
    engine, _, _ = replay_entries(Journal.open(copy), "brd", None, key=None)
    assert engine.settle_ms == SETTLE_MS and engine.state() == state
    # back home, the checkpoint is used again: nothing replayed
    home = new_bridge(journal, loop)
    with caplog.at_level(logging.INFO):
        caplog.clear()
        home.pipeline.restore()
    assert home.boards["brd"].engine.state() == state
    assert not [r for r in caplog.records if "checkpoint" in r.getMessage()]


def test_a_checkpoint_moved_to_another_board_is_not_read(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    journal = tmp_path / "j.sqlite3"
    play_opera(journal, loop)
    j = Journal.open(journal)
    cp = j.checkpoint("brd")
    key = checkpoint.ensure_key(checkpoint.key_path())
    assert cp is not None
    with pytest.raises(checkpoint.CheckpointRejected, match="signature"):
        checkpoint.load(key, "other", cp.code, SETTLE_MS, cp.event_seq, cp.state, cp.mac)
    with pytest.raises(checkpoint.CheckpointRejected, match="signature"):
        checkpoint.load(key, "brd", cp.code, 200, cp.event_seq, cp.state, cp.mac)
    signed = (cp.after_entry, cp.headers)
    assert checkpoint.load(key, "brd", cp.code, SETTLE_MS, cp.event_seq, cp.state, cp.mac, *signed).state().game_over
    # the signature covers the last entry it includes and the headers too (issue 21)
    for after, headers in ((cp.after_entry - 1, cp.headers), (cp.after_entry, {**cp.headers, "White": "X"})):
        with pytest.raises(checkpoint.CheckpointRejected, match="signature"):
            checkpoint.load(key, "brd", cp.code, SETTLE_MS, cp.event_seq, cp.state, cp.mac, after, headers)


def test_a_checkpoint_whose_entry_or_headers_changed_is_replayed_and_export_has_one_game(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    journal = tmp_path / "j.sqlite3"
    play_opera(journal, loop)
    for change in ("UPDATE checkpoints SET after_entry = 0", "UPDATE checkpoints SET headers = '{\"Round\":\"9\"}'"):
        with sqlite3.connect(journal) as db:
            db.execute(change)
        games = pgn_games(Journal.open(journal), "brd")
        assert len(games) == 1 and len(list(games[0].mainline_moves())) == len(MOVES), change


def test_the_key_file_is_private_made_once_and_refused_when_others_may_write_it(tmp_path: Path) -> None:
    path = tmp_path / "state" / "touchmove" / "checkpoint.key"
    key = checkpoint.ensure_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(key.secret) == checkpoint.KEY_BYTES
    assert checkpoint.ensure_key(path) == key and checkpoint.find_key(path) == key     # made once, kept
    assert checkpoint.find_key(tmp_path / "none") is None and not (tmp_path / "none").exists()
    path.chmod(0o620)
    with pytest.raises(checkpoint.CheckpointKeyError, match="writable by others"):
        checkpoint.find_key(path)
    path.chmod(0o600)
    path.write_text("not hex\n")
    with pytest.raises(checkpoint.CheckpointKeyError, match="does not hold a checkpoint key"):
        checkpoint.find_key(path)
    env = {"TOUCHMOVE_CHECKPOINT_KEY": "/elsewhere/k", "XDG_STATE_HOME": "/xdg"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        assert checkpoint.key_path("/etc/k") == Path("/etc/k")
        assert checkpoint.key_path() == Path("/elsewhere/k")
        mp.delenv("TOUCHMOVE_CHECKPOINT_KEY")
        assert checkpoint.key_path() == Path("/xdg/touchmove/checkpoint.key")


def test_run_says_in_one_line_when_it_cannot_make_its_key(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[journal]\npath = "{tmp_path / "j.sqlite3"}"\ncheckpoint_key = "{blocked / "k"}"\n')
    done = subprocess.run([sys.executable, "-m", "touchmove.cli", "run", "--config", str(cfg)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("touchmove run: cannot create the checkpoint key") and done.stderr.count("\n") == 1
    assert not (tmp_path / "j.sqlite3").exists()


def test_an_old_journal_gets_the_new_columns_and_its_unsigned_checkpoint_is_replaced(
        tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    journal = tmp_path / "j.sqlite3"
    state = play_opera(journal, loop)
    with sqlite3.connect(journal) as db:       # as the previous version wrote it: no settle_ms, no mac
        db.execute("ALTER TABLE checkpoints DROP COLUMN mac")
        db.execute("ALTER TABLE checkpoints DROP COLUMN settle_ms")
    again = new_bridge(journal, loop)
    again.pipeline.restore()
    assert again.boards["brd"].engine.state() == state
    again.pipeline.checkpoint(again.boards["brd"])
    again.pipeline.flush()
    cp = again.pipeline.journal.checkpoint("brd")
    assert cp is not None and cp.mac and cp.settle_ms == SETTLE_MS
