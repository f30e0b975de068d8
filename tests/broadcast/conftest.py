"""Every round PGN a broadcast test writes (``round-<n>.pgn`` under its ``tmp_path``) is read by Debian's
pgn-extract afterwards (issue 36: the programs organisers use read touchmove's outputs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broadcast.third_party import check_with_pgn_extract


@pytest.fixture(autouse=True)
def round_pgns_read_by_pgn_extract(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        return  # the test's own failure says more
    for path in sorted(tmp_path.rglob("round-*.pgn")):
        if path.name.count("-") == 1:  # round-<n>.pgn (not the per-game or state files)
            check_with_pgn_extract(path)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)
