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
from touchmove import __version__, cli, records, samples
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
    assert status == 2
    assert "a-file" in one_line_error(err) and "journal" in one_line_error(err)


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
    assert status == 2
    assert "missing.pgn" in one_line_error(err)


def test_demo_with_a_pgn_without_moves(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.pgn"
    path.write_text('[Event "x"]\n\n*\n')
    status, _, err = run_main(capsys, "demo", "--pgn", str(path))
    assert status == 2
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
    assert proc.returncode == 130, err   # 0 where the suite began with SIGINT ignored: see tests/conftest.py
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


# -- every wrong invocation a club meets: one line on stderr naming the problem, nothing on stdout, no traceback,
# -- exit 2 for a wrong option or file (1 for other errors) -----------------------------------------------------

def bad_invocations(d: Path) -> list[tuple[list[str], int, str]]:
    """Return (argv, exit status, a word the error line must hold) for each case; files are made in ``d``."""
    (d / "folder").mkdir()
    (d / "a-file").write_text("x\n")
    (d / "bad.toml").write_text("this is = = not toml\n")
    (d / "binary.pgn").write_bytes(b"\xff\xfe\x00garbage\x80")
    (d / "illegal.pgn").write_text('[Event "x"]\n\n1. e4 e5 2. Ke3 *\n')
    (d / "empty.pgn").write_text('[Event "x"]\n\n*\n')
    (d / "e4.jsonl").write_text("\n".join(E4) + "\n")
    (d / "unknown-key.toml").write_text("[serial]\nbaud = 9600\n")
    (d / "bad-url.toml").write_text('[mqtt]\nurl = "http://x"\n')
    (d / "bad-usb.toml").write_text('[serial]\nusb = ["2e8a:0005"]\n')
    (d / "journal-dir.toml").write_text(f'[journal]\npath = "{d / "folder"}"\n')
    (d / "journal-garbage.toml").write_text(f'[journal]\npath = "{d / "a-file"}"\n')
    (d / "journal-under-file.toml").write_text(f'[journal]\npath = "{d / "a-file" / "j" / "j.sqlite3"}"\n')
    (d / "no-event.toml").write_text('round = 1\n[[rounds]]\nnumber = 1\n')
    (d / "arbiters-bad.toml").write_text("[[arbiter]]\nname = 'A'\ntoken_sha256 = 'nothex'\n")
    (d / "arbiters.toml").write_text('[[arbiter]]\nname = "Anna"\nrole = "chief"\ntoken_sha256 = "'
                                     + "a" * 64 + '"\n')
    (d / "tournament.toml").write_text(samples.TOURNAMENT)
    missing = str(d / "missing")
    cases: list[tuple[list[str], int, str]] = [
        ([], 2, "required"), (["frobnicate"], 2, "frobnicate"), (["--bogus"], 2, "--bogus"),
        # required arguments
        (["run"], 2, "--config"), (["broadcast"], 2, "--config"), (["export"], 2, "JOURNAL"), (["init"], 2, "kind"),
        (["replay", str(d / "e4.jsonl")], 2, "--pgn"), (["board-check"], 2, "port"), (["broker-auth"], 2, "--out"),
        (["arbiters"], 2, "ACTION"), (["arbiters", "add"], 2, "FILE"), (["arbiters", "add", "f"], 2, "name"),
        (["arbiters", "list"], 2, "FILE"), (["arbiters", "revoke", "f"], 2, "name"), (["arbiters", "frob"], 2, "frob"),
        (["doctor"], 2, "--ports"),
        # wrong values
        (["demo", "--speed", "x"], 2, "--speed"), (["demo", "--speed", "0"], 2, "--speed"),
        (["demo", "--speed", "-3"], 2, "--speed"), (["demo", "--settle-ms", "x"], 2, "--settle-ms"),
        (["demo", "--broker", "http://x"], 1, "mqtt://"),
        (["replay", "--pgn", "--jsonl", str(d / "e4.jsonl")], 2, "--jsonl"),
        (["replay", "--settle-ms", "x", "--pgn"], 2, "--settle-ms"), (["replay", "--fen", "x", "--pgn",
                                                                       str(d / "e4.jsonl")], 2, "expected"),
        (["run", "--config", missing, "--log-level", "FOO"], 2, "FOO"),
        (["broadcast", "--config", str(d / "tournament.toml"), "--port", "x"], 2, "--port"),
        (["broadcast", "--config", str(d / "tournament.toml"), "--port", "70000"], 2, "65535"),
        (["broadcast", "--config", str(d / "tournament.toml"), "--round", "9"], 2, "round 9"),
        (["broadcast", "--config", str(d / "tournament.toml"), "--round", "x"], 2, "--round"),
        (["broadcast-demo", "--boards", "-1"], 2, "--boards"), (["broadcast-demo", "--boards", "0"], 2, "--boards"),
        (["broadcast-demo", "--boards", "x"], 2, "--boards"), (["broadcast-demo", "--plies", "0"], 2, "--plies"),
        (["broadcast-demo", "--move-time", "-1"], 2, "--move-time"), (["broadcast-demo", "--port", "-1"], 2, "--port"),
        (["cluster-demo", "--boards", "-1"], 2, "--boards"), (["cluster-demo", "--boards", "0"], 2, "--boards"),
        (["cluster-demo", "--boards", "51"], 2, "--boards"), (["cluster-demo", "--boards", "x"], 2, "--boards"),
        (["cluster-demo", "--plies", "0"], 2, "--plies"), (["cluster-demo", "--speed", "0"], 2, "--speed"),
        (["cluster-demo", "--kill-after", "-1"], 2, "--kill-after"),
        (["cluster-demo", "--kill-node-of", "nobody"], 2, "--kill-node-of"),
        (["doctor", "--timeout", "x", "--ports"], 2, "--timeout"), (["doctor", "--timeout", "0", "--ports"], 2,
                                                                     "--timeout"),
        (["board-check", str(d / "a-file"), "--seconds", "x"], 2, "--seconds"),
        (["init", "nonsense"], 2, "nonsense"),
        # files that are missing, folders, or not what they should be
        (["run", "--config", missing], 2, "missing"), (["run", "--config", str(d / "folder")], 2, "folder"),
        (["run", "--config", str(d / "bad.toml")], 2, "bad.toml"),
        (["run", "--config", str(d / "unknown-key.toml")], 2, "baud"),
        (["run", "--config", str(d / "bad-url.toml")], 2, "mqtt"),
        (["run", "--config", str(d / "bad-usb.toml")], 2, "usb"),
        (["run", "--config", str(d / "journal-dir.toml")], 2, "journal"),
        (["run", "--config", str(d / "journal-garbage.toml")], 2, "journal"),
        (["run", "--config", str(d / "journal-under-file.toml")], 2, "a-file"),
        (["broadcast", "--config", missing], 2, "missing"), (["broadcast", "--config", str(d / "folder")], 2, "folder"),
        (["broadcast", "--config", str(d / "bad.toml")], 2, "bad.toml"),
        (["broadcast", "--config", str(d / "no-event.toml")], 2, "event"),
        (["demo", "--pgn", missing], 2, "missing"), (["demo", "--pgn", str(d / "folder")], 2, "folder"),
        (["demo", "--pgn", str(d / "binary.pgn")], 2, "binary.pgn"),
        (["demo", "--pgn", str(d / "illegal.pgn")], 2, "Ke3"), (["demo", "--pgn", str(d / "empty.pgn")], 2, "moves"),
        (["replay", missing, "--pgn"], 2, "missing"), (["replay", str(d / "folder"), "--pgn"], 2, "folder"),
        (["export", missing], 2, "missing"), (["export", str(d / "folder")], 2, "folder"),
        (["export", str(d / "a-file")], 2, "journal"), (["export", str(d / "e4.jsonl")], 2, "journal"),
        (["init", "bridge", str(d / "a-file")], 2, "exists"), (["init", "tournament", str(d / "folder")], 2, "folder"),
        (["init", "bridge", str(d / "a-file" / "bridge.toml")], 2, "a-file"),
        (["board-check", missing], 2, "missing"), (["board-check", str(d / "a-file")], 2, "not a tty"),
        (["doctor", "--config", missing], 2, "missing"), (["doctor", "--tournament", missing], 2, "missing"),
        (["broker-auth", "--out", str(d / "out")], 2, "--bridge"),
        (["broker-auth", "--out", str(d / "a-file"), "--bridge", "a", "--broadcaster", "b"], 2, "--out"),
        (["broker-auth", "--out", str(d / "a-file" / "x"), "--bridge", "a", "--broadcaster", "b"], 2, "--out"),
        (["broker-auth", "--out", str(d / "o2"), "--bridge", "a b", "--broadcaster", "b"], 2, "a b"),
        (["broker-auth", "--out", str(d / "o3"), "--bridge", "a", "--broadcaster", "a"], 2, "twice"),
        (["broker-auth", "--out", str(d / "o4"), "--bridge", "a", "--broadcaster", "b", "--port", "1884"], 2,
         "must differ"),
        (["broker-auth", "--out", str(d / "o5"), "--bridge", "a", "--broadcaster", "b", "--viewer-port", "0"], 2,
         "1 to 65535"),
        (["arbiters", "add", str(d / "folder"), "Bob"], 2, "folder"),
        (["arbiters", "add", str(d / "arbiters-bad.toml"), "Bob"], 2, "token_sha256"),
        (["arbiters", "add", str(d / "new.toml"), "  "], 2, "empty"),
        (["arbiters", "add", str(d / "a-file" / "x.toml"), "Bob"], 2, "a-file"),
        (["arbiters", "list", missing], 2, "missing"), (["arbiters", "list", str(d / "arbiters-bad.toml")], 2,
                                                          "token_sha256"),
        (["arbiters", "list", str(d / "bad.toml")], 2, "bad.toml"),
        (["arbiters", "revoke", missing, "Anna"], 2, "missing"),
        (["arbiters", "revoke", str(d / "arbiters.toml"), "Nobody"], 1, "Nobody"),
    ]
    return cases


def test_every_bad_invocation_is_one_line_on_stderr(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = bad_invocations(tmp_path)
    assert len(cases) >= 80
    wrong = []
    for argv, status, word in cases:
        got, out, err = run_main(capsys, *argv)
        lines = err.strip().splitlines()
        if got != status or out or len(lines) != 1 or "Traceback" in err or word.lower() not in err.lower():
            wrong.append(f"{argv}: exit {got} (want {status}), stdout {out!r}, stderr {err!r}")
    assert not wrong, "\n".join(wrong)


def test_the_old_arbiters_module_is_the_subcommand() -> None:
    done = subprocess.run([sys.executable, "-m", "touchmove.broadcast.arbiters"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert "ACTION" in one_line_error(done.stderr)


def test_run_without_a_broker_says_it_is_unreachable_and_the_fix(tmp_path: Path) -> None:
    """Issue 38: the README's wording (`the broker ... is unreachable`), not "[Errno 111] ... next try in 10.0s"."""
    config = tmp_path / "bridge.toml"
    config.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{closed_port()}"\n[journal]\npath = "j/j.sqlite3"\n')
    proc = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config", str(config)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        seen: list[str] = []
        while not any("next try" in line for line in seen) and len(seen) < 100:
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    said = "".join(seen)
    assert "is unreachable (connection refused" in said and "sudo apt-get install mosquitto" in said, said
    assert "Errno" not in said and "next try in " in said
