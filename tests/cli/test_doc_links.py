"""Every relative link in the user documentation leads to a file that exists, and every #anchor to a heading
of that file (as GitHub names headings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.conftest import REPO

PAGES = [REPO / "README.md", REPO / "bench" / "README.md", REPO / "hardware" / "README.md",
         *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """Return the GitHub anchors of a Markdown page's headings."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def links(page: Path) -> list[str]:
    """Return the page's relative link targets (code blocks left out)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_links_lead_somewhere(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in anchors(dest)):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: {broken}"


def test_the_readme_has_what_a_user_needs() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for heading in ("## Status", "## Install", "## Quick start", "## Everyday use", "## Troubleshooting",
                    "## Configuration and reference", "## Measured", "## License"):
        assert heading in text
    troubles = text.split("## Troubleshooting")[1].split("\n## ")[0]
    assert sum(1 for line in troubles.splitlines() if line.startswith("| ") and "---" not in line) - 1 == 10
    assert "not yet on a physical board" in text and "unchecked" in text
    assert not re.search(r"\bissue \d+|\bcommit [0-9a-f]{7}", text)
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


HINT = re.compile(r"((?:docs/)?[\w-]+\.md)#([\w-]+)")


def test_every_hint_the_program_gives_points_at_a_real_section() -> None:
    """A fix hint in the program's messages (doctor, the bridge's port report, errors) names docs/page.md#anchor:
    each page and heading exists; no hint names a README section by title (those moved and broke)."""
    sources = sorted((REPO / "host" / "touchmove").rglob("*.py"))
    found, broken = 0, []
    for source in sources:
        text = source.read_text(encoding="utf-8")
        assert not re.search(r"see README, [A-Z]", text), f"{source}: a README section named by title"
        for page, anchor in HINT.findall(text):
            dest = REPO / (page if page.startswith("docs/") else f"docs/{page}")
            if page == "README.md":
                dest = REPO / "README.md"
            found += 1
            if not dest.exists() or anchor not in anchors(dest):
                broken.append(f"{source.relative_to(REPO)}: {page}#{anchor}")
    assert found >= 10
    assert not broken, broken
