"""The bench scripts' own modules (bench/figures.py, bench/tables.py, bench/changelog.py) for the tests: bench/ is a
folder of scripts, not a package, so it is put on the import path as the scripts have it."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
