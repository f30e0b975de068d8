"""A crash while the journal's disk is full loses nothing (issue 21): see tests/e2e/crash_while_full.py. One run
on tmpfs here; ``bench/crash_while_full.py`` makes 20 and more on tmpfs and ext4."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.e2e.crash_while_full import can_mount, crash_while_full


def test_a_crash_while_the_disk_is_full_loses_nothing_and_reuses_no_seq(tmp_path: Path) -> None:
    why = can_mount("tmpfs")
    if why is not None:
        if os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1":
            pytest.fail(why)
        pytest.skip(why)
    run = crash_while_full(tmp_path, "tmpfs", random.Random(21))
    print(run)
    assert run.journaled_at_crash < run.plies_at_crash      # the crash did lose journal writes
    assert run.restarted and run.reused_seqs == 0
    assert (run.played, run.published, run.journaled, run.exported) == (33, 33, 33, 33), run
