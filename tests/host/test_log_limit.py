"""Log lines about bad input, limited per source, with a count of what was left out."""

from __future__ import annotations

import logging

import pytest

from touchmove.log_limit import LogLimit


def test_a_flood_is_a_few_lines_and_a_count_per_source(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    limit = LogLimit(logging.getLogger("test.limit"), "bad input", lines=3, window_s=10, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, "test.limit"):
        for i in range(1000):
            now[0] = i * 0.005           # 200 a second for 5 s
            limit.log(logging.WARNING, "ttyA", "ttyA: garbage %d", i)
        limit.log(logging.WARNING, "ttyB", "ttyB: garbage")     # another port has its own lines
        limit.flush()                      # the window is not over: nothing yet
        assert len(caplog.records) == 4
        now[0] = 10.0
        limit.flush()
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:3] == ["ttyA: garbage 0", "ttyA: garbage 1", "ttyA: garbage 2"]
    assert messages[3] == "ttyB: garbage"
    assert messages[4] == "ttyA: 997 more line(s) about bad input suppressed in the last 10 s"
    assert len(messages) == 5 and limit.suppressed_total == 997
