"""The figures tables of bench/README.md and the README are the JSON of bench/figures/, and the diary stays moved.

``make bench-tables`` writes the tables; these tests fail when a page says other figures than its JSON (a figure
edited by hand, a bench run without the tables made again), when a bench's JSON has no table, and when a dated
section is left in bench/README.md instead of docs/changelog.md (``python bench/changelog.py`` moves it).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import changelog  # bench/changelog.py and bench/tables.py: tests/bench/conftest.py puts bench/ on the path
import pytest
import tables

from tests.bench.conftest import BENCH, REPO


@pytest.mark.parametrize("page", tables.PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_table_is_made_from_its_json(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert tables.BLOCK.search(text), f"{page.name} has no figures table"
    assert tables.render(text, tables.load_docs()) == text, (
        f"{page.relative_to(REPO)}: a table differs from bench/figures/*.json (make bench-tables)")


def test_a_figure_changed_in_its_json_is_a_table_that_differs() -> None:
    docs = tables.load_docs()
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    changed = copy.deepcopy(docs)
    changed["replay_throughput"]["figures"][0]["value"] = -1
    assert tables.render(text, changed) != text
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    changed = copy.deepcopy(docs)
    changed["bridge_latency"]["date"] = "1999-01-01T00:00:00Z"
    assert "| 1999-01-01, load" in tables.render(readme, changed) and "| 1999-01-01, load" not in readme


def test_every_bench_json_has_a_table_and_every_readme_row_a_json() -> None:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    blocks = {m.group(2) for m in tables.BLOCK.finditer(text)}
    names = {p.stem for p in (BENCH / "figures").glob("*.json")}
    assert names <= blocks, f"no table in bench/README.md for {sorted(names - blocks)}"
    assert {row.bench for row in tables.README_ROWS} <= names | blocks
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = next(m.group(3) for m in tables.BLOCK.finditer(readme) if m.group(2) == "readme")
    assert "not in the last run" not in block


def test_figures_not_measured_by_the_script_say_so() -> None:
    for path in sorted((BENCH / "figures").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert doc["source"] == "measured" or doc["source"].startswith("transcribed from "), path.name
        block = tables.bench_block(doc)
        assert ("Not measured by the script" in block) == (doc["source"] != "measured"), path.name
        for key in ("bench", "commit", "date", "machine", "load", "command", "figures"):
            assert key in doc, f"{path.name}: no {key}"


def test_the_table_pivots_rows_and_columns() -> None:
    doc = {"bench": "b", "source": "measured", "commit": "abc1234", "date": "2026-12-06T10:00:00Z",
           "machine": {"cores": 2, "cpu": "CPU", "python": "3.11.7"}, "load": {"start": [1.5, 1, 1], "end": [2, 1, 1]},
           "command": "python bench/b.py", "notes": ["n"],
           "figures": [{"name": "p50", "value": 206.4, "unit": "ms", "group": "1 boards"},
                       {"name": "CPU", "value": 68, "unit": "% of a core", "group": "1,000 boards"},
                       {"name": "p50", "value": 1206.0, "unit": "ms", "group": "1,000 boards"}]}
    assert tables.bench_block(doc) == (
        "| | p50 | CPU |\n|---|---|---|\n| 1 boards | 206.4 ms | – |\n| 1,000 boards | 1,206 ms | 68% of a core |\n"
        "\n`python bench/b.py`, 2026-12-06 10:00:00 UTC, at `abc1234`, load average 1.5 at the start, 2 at the end, "
        "2 cores (CPU), Python 3.11.7.\n\n- n\n")


def test_bench_readme_keeps_no_dated_section() -> None:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    above, marker, below = text.partition(changelog.MARKER)
    assert marker, "bench/README.md lost its <!-- changelog --> marker"
    assert not below.strip(), "sections below the marker: python bench/changelog.py moves them to docs/changelog.md"
    dated = [line for line in above.splitlines() if line.startswith("#") and changelog.DATE.search(line)]
    assert not dated, f"dated sections belong in docs/changelog.md: {dated}"


def test_the_changelog_is_newest_first() -> None:
    _, entries = changelog.split((REPO / "docs" / "changelog.md").read_text(encoding="utf-8"))
    dates = [e.date for e in entries if e.date]
    assert len(entries) >= 27 and dates == sorted(dates, reverse=True)


def test_a_section_appended_to_bench_readme_moves_to_the_top_of_the_changelog_unchanged() -> None:
    log = "# Changelog\n\nintro\n\n## Old (2026-12-01)\n\nold text\n\n## Older (2026-11-29)\n\nolder\n"
    appended = ("## Bridge latency\n\nthe bench's own section\n\n"
                "## A new measure (2026-12-06, issue 40)\n\nnew text, | a | table |\n\n### its part\n\nmore\n")
    _, sources = changelog.split("# Benchmarks\n\n" + appended)
    text, moved, differ = changelog.move(sources, log, keep={"## Bridge latency"})
    assert moved == ["## A new measure (2026-12-06, issue 40)"] and differ == []
    assert text == ("# Changelog\n\nintro\n\n## A new measure (2026-12-06, issue 40)\n\nnew text, | a | table |\n\n"
                    "### its part\n\nmore\n\n## Old (2026-12-01)\n\nold text\n\n## Older (2026-11-29)\n\nolder\n")
    again, moved, differ = changelog.move(sources, text, keep={"## Bridge latency"})
    assert again == text and moved == []
    edited = [changelog.Section(s.heading, s.text + "an edit\n") for s in sources]
    assert changelog.move(edited, text, keep=set())[2] == ["## A new measure (2026-12-06, issue 40)"]


def test_the_changelog_has_each_heading_once_and_links_that_work_from_docs() -> None:
    """A heading twice would make two entries one anchor; a link written for bench/ (``figures/``, ``README.md``)
    would lead nowhere from docs/ (tests/cli/test_doc_links.py follows the ones that are there)."""
    log = (REPO / "docs" / "changelog.md").read_text(encoding="utf-8")
    _, entries = changelog.split(log)
    headings = [e.heading for e in entries]
    assert len(headings) == len(set(headings))
    assert not re.search(r"\]\((?!\.\./|[a-z-]+\.md|#|https?:)", log), "a link the move would have broken"
