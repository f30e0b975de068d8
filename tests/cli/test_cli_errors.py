"""Every command-line error is one line on standard error and a non-zero exit, never a traceback; Ctrl-C
exits 130. One test per case a newcomer met (issue 14), run in-process where the process adds nothing."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.conftest import one_line_error, touchmove
from touchmove import __version__, cli, records
from touchmove.cli import main

E4 = ['{"t":1000,"type":"lift","sq":"e2"}', '{"t":1300,"type":"place","sq":"e4"}']


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])   # nothing listens once the socket is closed


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_main(capsys, "--version")
    assert status == 0 and out.strip() == f"touchmove {__version__}"


@pytest.mark.parametrize("argv", [["frobnicate"], [], ["replay", "--pgn", "--bogus"], ["demo", "--speed", "x"]])
def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    status, _, err = run_main(capsys, *argv)
    assert status == 2
    assert "--help" in one_line_error(err)


def test_run_with_an_unknown_log_level(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run_main(capsys, "run", "--config", str(tmp_path / "bridge.toml"), "--log-level", "FOO")
    assert status == 2
    assert "FOO" in one_line_error(err)


def test_run_with_a_missing_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run_main(capsys, "run", "--config", str(tmp_path / "nope.toml"))
    assert status == 2
    assert "nope.toml" in one_line_error(err)


def test_run_whose_journal_folder_cannot_be_made(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    config = tmp_path / "bridge.toml"
    config.write_text(f'[journal]\npath = "{tmp_path}/a-file/journal/j.sqlite3"\n')
    status, _, err = run_main(capsys, "run", "--config", str(config))
    assert status == 1
    assert "a-file" in one_line_error(err)


@pytest.mark.parametrize("content", [b"1. e4 e5 *\n", b"SQLite format 3\x00" + bytes(200), None])
def test_export_of_a_file_that_is_not_a_journal(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                content: bytes | None) -> None:
    path = tmp_path / "game.pgn"
    if content is not None:
        path.write_bytes(content)
    status, _, err = run_main(capsys, "export", str(path))
    assert status == 2
    assert "journal" in one_line_error(err)
    assert path.exists() == (content is not None)
    if content is not None:
        assert path.read_bytes() == content   # looked at, never changed


def test_export_of_an_sqlite_file_without_the_journal_tables(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "other.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (x)")
    status, _, err = run_main(capsys, "export", str(path))
    assert status == 2 and "not a touchmove journal" in one_line_error(err)
    with sqlite3.connect(path) as db:   # the file was not turned into a journal
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["notes"]


def test_demo_with_a_missing_pgn(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run_main(capsys, "demo", "--pgn", str(tmp_path / "missing.pgn"))
    assert status == 1
    assert "missing.pgn" in one_line_error(err)


def test_demo_with_a_pgn_without_moves(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.pgn"
    path.write_text('[Event "x"]\n\n*\n')
    status, _, err = run_main(capsys, "demo", "--pgn", str(path))
    assert status == 1
    assert "no game with moves" in one_line_error(err)


def test_demo_with_an_http_broker_url(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_main(capsys, "demo", "--broker", "http://x")
    assert status == 1
    assert "mqtt://" in one_line_error(err)


def test_demo_with_an_unreachable_broker(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"mqtt://127.0.0.1:{closed_port()}"
    status, _, err = run_main(capsys, "demo", "--broker", url, "--no-ui")
    assert status == 1
    assert "unreachable" in one_line_error(err)


def test_replay_of_an_empty_position(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "e4.jsonl"
    path.write_text("\n".join(E4) + "\n")
    status, out, err = run_main(capsys, "replay", str(path), "--pgn", "--fen", "8/8/8/8/8/8/8/8 w - - 0 1")
    assert status == 2 and out == ""
    assert "no white king" in one_line_error(err)


@pytest.mark.parametrize("fen, why", [
    ("rnbq1bnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1BNR w - - 0 1", "no white king"),       # no kings
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNP w KQkq - 0 1", "pawns on backrank"),
    ("rnbqkbnr/pppp1ppp/8/4Q3/8/8/PPPPPPPP/RNB1KBNR w KQkq - 0 1", "opposite check"),   # black in check, white to move
    ("not a fen", "expected"),
])
def test_replay_refuses_an_illegal_fen(capsys: pytest.CaptureFixture[str], tmp_path: Path, fen: str,
                                       why: str) -> None:
    path = tmp_path / "e4.jsonl"
    path.write_text("\n".join(E4) + "\n")
    status, out, err = run_main(capsys, "replay", str(path), "--jsonl", "--fen", fen)
    assert status == 2 and out == ""
    assert why in one_line_error(err)


def test_a_setup_record_with_a_kingless_fen_is_a_bad_line() -> None:
    line = json.dumps({"t": 0, "type": "setup", "fen": "8/8/8/8/8/8/8/8 w - - 0 1"})
    with pytest.raises(records.RecordError, match="no white king"):
        records.parse_line(line)
    assert records.fen_problem(records.chess.STARTING_FEN) is None


def test_replay_of_a_file_whose_every_line_is_malformed(capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('not json\n{"t":1,"type":"lift"}\n{"type":"place","sq":"e4"}\n')
    status, out, err = run_main(capsys, "replay", str(path), "--pgn")
    assert status == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 4 and "Traceback" not in err          # each bad line, then the one error
    assert lines[-1] == f"touchmove replay: {path}: no valid record to replay"


def test_replay_of_an_empty_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    status, _, err = run_main(capsys, "replay", str(path), "--jsonl")
    assert status == 1 and "no valid record" in one_line_error(err)


def test_an_unexpected_exception_is_one_line_and_debug_shows_it(capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    broken = ModuleType("touchmove_test_broken")

    def handler(args: object) -> int:
        raise RuntimeError("something inside broke\nover two lines")

    broken.configure = lambda parser: parser.set_defaults(handler=handler)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "touchmove_test_broken", broken)
    monkeypatch.setattr(cli, "SUBCOMMANDS", [*cli.SUBCOMMANDS, ("broken", "touchmove_test_broken", "fails")])
    status, _, err = run_main(capsys, "broken")
    assert status == 1
    assert one_line_error(err) == ("touchmove broken: RuntimeError: something inside broke over two lines "
                                   "(run with --debug for the traceback)")
    with pytest.raises(RuntimeError):
        main(["broken", "--debug"])


def test_ctrl_c_during_replay_from_stdin() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "replay", "-", "--jsonl"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(E4[0] + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["type"] == "game_start"   # it is reading stdin now
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    path = tmp_path / "e4.jsonl"
    path.write_text("\n".join(E4 * 1) + "\n")
    lines = [json.dumps({"t": 1000 + 10 * i, "type": "lift" if i % 2 == 0 else "place", "sq": "e2"})
             for i in range(20_000)]
    path.write_text("\n".join(lines) + "\n")
    done = subprocess.run(f"{sys.executable} -m touchmove.cli replay {path} --jsonl | head -1", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith('{"type":"game_start"')
    assert done.stderr == ""


def test_ctrl_c_stops_the_bridge_with_130(tmp_path: Path) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{closed_port()}"\n[journal]\npath = "j/j.sqlite3"\n')
    proc = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config", str(config)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = [proc.stderr.readline() for _ in range(1)]
    while "touchmove bridge" not in seen[-1] and seen[-1] and len(seen) < 50:
        seen.append(proc.stderr.readline())   # until the start-up log line: its signal handlers are set
    assert "touchmove bridge" in seen[-1], seen
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert (tmp_path / "j" / "j.sqlite3").exists()


def test_the_console_script_reports_errors_the_same_way(tmp_path: Path) -> None:
    done = touchmove("replay", str(tmp_path / "missing.jsonl"), "--pgn")
    assert done.returncode == 2
    assert "missing.jsonl" in one_line_error(done.stderr)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(
    st.text(max_size=60),
    st.sampled_from([*E4, '{"t":5,"type":"setup","fen":"8/8/8/8/8/8/8/8 w - - 0 1"}', '{"t":-1}', "{}", "[]"]),
    st.builds(lambda t, kind, sq: json.dumps({"t": t, "type": kind, "sq": sq}),
              st.integers(-5, 10**12), st.sampled_from(["lift", "place", "clock", "snapshot", "bogus"]),
              st.sampled_from(["e2", "e4", "z9", "", 3])),
), max_size=30), st.sampled_from(["--pgn", "--jsonl"]))
def test_replay_fuzzed(capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: list[str], mode: str) -> None:
    """Any text: the replay exits 0 (something replayed) or 1 (no valid record), every message on stderr is
    one of its own lines, and nothing raises."""
    path = tmp_path / "fuzz.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    status, _, err = run_main(capsys, "replay", str(path), mode)
    assert status in (0, 1)
    assert all(line.startswith("touchmove replay: ") for line in err.splitlines()), err
    assert (status == 1) == err.rstrip().endswith("no valid record to replay")


def test_broadcast_demo_with_an_unreachable_broker(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_main(capsys, "broadcast-demo", "--broker", f"mqtt://127.0.0.1:{closed_port()}")
    assert status == 1
    assert "unreachable" in one_line_error(err)


@pytest.mark.parametrize("exc, line", [
    (TimeoutError(), "TimeoutError (run with --debug for the traceback)"),
    (FileNotFoundError(2, "No such file or directory", "x.pgn"), "x.pgn: No such file or directory"),
    (ValueError("bad value"), "bad value"),
])
def test_describe_says_what_went_wrong_in_one_line(exc: BaseException, line: str) -> None:
    assert cli.describe(exc) == line
