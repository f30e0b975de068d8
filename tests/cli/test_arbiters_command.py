"""``touchmove arbiters add|list|revoke``, and one story about who may act: the broadcaster's start banner and
``touchmove doctor`` read the same accounts the console accepts (they said "off" / "none" while the accounts of
an arbiters.toml made as docs/console.md says worked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.broadcast.broadcast_helpers import tournament_data
from touchmove.broadcast.arbiter_book import ArbiterBook, accounts_summary, book_for
from touchmove.broadcast.command import arbiters_line
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.cli import main
from touchmove.doctor import Report, check_arbiters


def add(capsys: pytest.CaptureFixture[str], path: Path, name: str, *extra: str) -> str:
    assert main(["arbiters", "add", str(path), name, *extra]) == 0
    out, _ = capsys.readouterr()
    return out.strip()


def test_add_list_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broadcast" / "arbiters.toml"        # the output folder does not exist yet
    anna = add(capsys, path, "Åsa Öberg", "--chief")
    bob = add(capsys, path, "Bob Deputy")
    assert anna not in path.read_text() and bob not in path.read_text()     # digests only
    book = ArbiterBook(file=path, revoked_path=path.parent / "arbiters-revoked.json")
    chief = book.authenticate(anna)
    assert chief is not None and chief.name == "Åsa Öberg" and chief.chief
    assert main(["arbiters", "list", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["Åsa Öberg\tchief\tactive", "Bob Deputy\tarbiter\tactive"]
    assert main(["arbiters", "revoke", str(path), "Bob Deputy"]) == 0
    assert "1 token(s) revoked" in capsys.readouterr().out
    assert book.authenticate(bob) is None and book.authenticate(anna) is not None   # a running book sees it
    revoked = json.loads((path.parent / "arbiters-revoked.json").read_text())
    assert [v["name"] for v in revoked.values()] == ["Bob Deputy"]
    assert main(["arbiters", "list", str(path)]) == 0
    assert "Bob Deputy\tarbiter\trevoked" in capsys.readouterr().out
    assert main(["arbiters", "revoke", str(path), "Bob Deputy"]) == 0
    assert "already revoked" in capsys.readouterr().out


def test_a_second_token_for_a_name_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "arbiters.toml"
    add(capsys, path, "Anna")
    assert main(["arbiters", "add", str(path), "Anna"]) == 0
    assert "already has a token" in capsys.readouterr().err


def service(tmp_path: Path, token: str | None = None) -> BroadcastService:
    data = tournament_data(2)
    data["broadcast"] = {"output_dir": str(tmp_path / "broadcast")}
    return BroadcastService(parse_tournament(data), token=token)


def test_banner_and_doctor_name_the_accounts_of_arbiters_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOUCHMOVE_ARBITER_TOKEN", raising=False)
    monkeypatch.delenv("TOUCHMOVE_ARBITERS", raising=False)
    monkeypatch.delenv("TOUCHMOVE_ARBITERS_FILE", raising=False)
    svc = service(tmp_path)
    assert "arbiter actions are off" in arbiters_line(svc)      # nobody yet: said, with the command to fix it
    assert "touchmove arbiters add" in arbiters_line(svc)
    report = Report()
    check_arbiters(report, tmp_path / "broadcast", None)
    assert report.lines[-1][0] == "warn"
    add(capsys, tmp_path / "broadcast" / "arbiters.toml", "Anna Chief", "--chief")   # as docs/console.md says
    line = arbiters_line(svc)
    assert "off" not in line and "1 arbiter account(s)" in line and "Anna Chief (chief)" in line
    report = Report()
    check_arbiters(report, tmp_path / "broadcast", None)
    assert report.lines[-1][:2] == ("ok", "arbiters: " + line.split("arbiters   ")[1])
    capsys.readouterr()


def test_the_shared_token_counts_as_an_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOUCHMOVE_ARBITERS", raising=False)
    monkeypatch.delenv("TOUCHMOVE_ARBITERS_FILE", raising=False)
    summary = accounts_summary(book_for(tmp_path, "s3cret"))
    assert summary is not None and "arbiter (chief)" in summary
    assert "1 arbiter account(s)" in arbiters_line(service(tmp_path, token="s3cret"))


def test_accounts_revocations_and_audit_log_are_owner_only(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Token digests, revocations and the audit log are 0600 even under a umask that gives the world read."""
    import os
    import stat

    from touchmove.broadcast.audit import AuditLog

    before = os.umask(0o022)
    try:
        path = tmp_path / "broadcast" / "arbiters.toml"
        add(capsys, path, "Anna Chief", "--chief")
        add(capsys, path, "Bob Deputy")
        assert main(["arbiters", "revoke", str(path), "Bob Deputy"]) == 0
        log = AuditLog(tmp_path / "broadcast" / "audit.jsonl")
        log.record(arbiter="Anna Chief", action="result")
    finally:
        os.umask(before)
    for made in (path, path.parent / "arbiters-revoked.json", tmp_path / "broadcast" / "audit.jsonl"):
        assert stat.S_IMODE(made.stat().st_mode) == 0o600, made
