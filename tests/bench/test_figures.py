"""bench/figures.py: what a bench writes beside its figures (commit, dirty flag, date, machine, load, command)."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import figures  # bench/figures.py: tests/bench/conftest.py puts bench/ on the path
import pytest

from tests.bench.conftest import BENCH, REPO


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git working tree with one commit: a module and a figures file."""
    root = tmp_path / "repo"
    (root / "bench" / "figures").mkdir(parents=True)
    (root / "code.py").write_text("x = 1\n")
    (root / "bench" / "figures" / "old.json").write_text("{}\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    return root


def test_a_run_writes_its_figures_and_what_they_were_measured_on(repo: Path, tmp_path: Path) -> None:
    argv = [str(BENCH / "replay_throughput.py"), "--games", "3"]
    run = figures.Run("replay_throughput", argv=argv, repo=repo)
    run.add("engine", 52650, "records/s", group="changes only")
    run.add("lost", 0)
    run.note("a remark")
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    path = run.write(tmp_path / "out")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert path == tmp_path / "out" / "replay_throughput.json"
    assert doc["bench"] == "replay_throughput" and doc["source"] == "measured"
    assert doc["commit"] == git(repo, "rev-parse", "--short", "HEAD")
    date = datetime.datetime.strptime(doc["date"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    assert before - datetime.timedelta(seconds=5) <= date <= datetime.datetime.now(datetime.UTC)
    assert doc["machine"]["cores"] == os.cpu_count()
    assert doc["machine"]["cpu"] and doc["machine"]["python"] == sys.version.split()[0]
    assert doc["command"] == "python bench/replay_throughput.py --games 3"
    assert doc["notes"] == ["a remark"]
    assert doc["figures"] == [
        {"name": "engine", "value": 52650, "unit": "records/s", "group": "changes only"},
        {"name": "lost", "value": 0, "unit": "", "group": ""},
    ]


def test_the_load_average_is_taken_at_the_start_and_at_the_end(repo: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    loads = iter([(1.0, 2.0, 3.0), (4.5, 5.5, 6.5)])
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    run = figures.Run("x", argv=["x.py"], repo=repo)
    doc = json.loads(run.write(tmp_path).read_text(encoding="utf-8"))
    assert doc["load"] == {"start": [1.0, 2.0, 3.0], "end": [4.5, 5.5, 6.5]}


def test_the_commit_is_marked_dirty_when_the_tree_differs_outside_the_figures(repo: Path) -> None:
    head = git(repo, "rev-parse", "--short", "HEAD")
    assert figures.commit(repo) == head
    (repo / "bench" / "figures" / "old.json").write_text('{"a run": 1}\n')   # a bench's own output
    (repo / "bench" / "figures" / "new.json").write_text("{}\n")
    assert figures.commit(repo) == head
    (repo / "code.py").write_text("x = 2\n")
    assert figures.commit(repo) == head + "+dirty"
    git(repo, "checkout", "-q", "code.py")
    (repo / "new_module.py").write_text("y = 1\n")                            # untracked code counts too
    assert figures.commit(repo) == head + "+dirty"


def test_outside_a_git_tree_the_commit_is_unknown(tmp_path: Path) -> None:
    assert figures.commit(tmp_path) == "unknown"


def test_a_figure_that_is_not_a_number_is_written_as_such(repo: Path, tmp_path: Path) -> None:
    run = figures.Run("x", argv=["x.py"], repo=repo)
    run.add("p99", float("nan"), "ms")
    text = run.write(tmp_path).read_text(encoding="utf-8")
    assert "NaN" not in text
    assert json.loads(text)["figures"][0]["value"] == "n/a"


def test_a_bench_writes_what_it_prints(tmp_path: Path) -> None:
    """A real bench script run as a process: the figures it prints are in its JSON, in the directory asked for."""
    committed = BENCH / "figures" / "delay_journal.json"
    before = committed.read_bytes() if committed.exists() else None
    env = {**os.environ, figures.DIR_ENV: str(tmp_path), "PYTHONPATH": str(REPO / "host")}
    out = subprocess.run([sys.executable, str(BENCH / "delay_journal.py"), "--boards", "3", "--plies", "10"],
                         env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    doc = json.loads((tmp_path / "delay_journal.json").read_text(encoding="utf-8"))
    values = {f["name"]: f["value"] for f in doc["figures"]}
    assert out.startswith(f"3 boards, {values['changes']} changes ({values['plies kept']} plies), "
                          f"{values['journal']:.2f} MB: read back in {values['read back']:.2f} s")
    assert values["boards"] == 3 and values["changes"] == 60
    assert doc["command"] == "python bench/delay_journal.py --boards 3 --plies 10"
    assert (committed.read_bytes() if committed.exists() else None) == before   # the committed figures untouched


def test_every_bench_script_writes_its_figures() -> None:
    scripts = sorted(p for p in BENCH.glob("*.py") if p.stem not in ("figures", "tables", "changelog"))
    assert len(scripts) == 16
    silent = [p.name for p in scripts if "Run(" not in p.read_text(encoding="utf-8")]
    assert not silent


def test_the_harder_hands_keep_the_default_hands_figures(tmp_path: Path) -> None:
    """bench/boards.py writes each kind of case to its own file: a run of the harder hands leaves boards.json (the
    default and fast hands) as it was, and names the games not exact by class."""
    (tmp_path / "boards.json").write_text("kept\n")
    env = {**os.environ, figures.DIR_ENV: str(tmp_path), "PYTHONPATH": str(REPO / "host")}
    subprocess.run([sys.executable, str(BENCH / "boards.py"), "--games", "2", "--hands", "harder", "--boards",
                    "chessnut", "--skip-latency"], env=env, capture_output=True, text=True, timeout=300, check=True)
    assert (tmp_path / "boards.json").read_text() == "kept\n"
    doc = json.loads((tmp_path / "boards_harder.json").read_text(encoding="utf-8"))
    values = {f["name"]: f["value"] for f in doc["figures"] if f["group"] == "chessnut, harder hands"}
    ends = ("exact", "recovered", "changes_lost", "board_mismatch", "illegal_move", "other alert", "wrong")
    assert sum(values[name] for name in ends) == 2
    assert values["not exact: unrevealable"] + values["not exact: engine"] == 2 - values["exact"]
