"""Dated sections of bench/README.md moved to docs/changelog.md, newest first, their text unchanged.

bench/README.md says what each bench measures, how to run it and its current figures (made from
bench/figures/*.json by bench/tables.py); what was measured on the way, section by dated section, is the changelog.
A section written at the end of bench/README.md (below the ``<!-- changelog -->`` marker), or one kept in another
copy of the page (a branch's, from before the diary moved), is moved with:

    python bench/changelog.py                       # the sections below the marker in bench/README.md
    python bench/changelog.py OLD.md [OLD.md ...]   # the sections of OLD.md that the changelog does not have

An entry keeps its heading and text; its date is the first date in its heading, else the latest in its text.
Sections that the changelog has under the same heading but with another text are named, not moved: a branch that
changed a moved section is merged by hand.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH_README = REPO / "bench" / "README.md"
CHANGELOG = REPO / "docs" / "changelog.md"
MARKER = "<!-- changelog -->"
DATE = re.compile(r"\b(20\d\d-\d\d-\d\d)\b")


@dataclass(frozen=True)
class Section:
    heading: str
    text: str  # the heading line, its text and the sub-sections below it, up to the next "## "

    @property
    def date(self) -> str:
        own: list[str] = DATE.findall(self.heading)
        if own:
            return own[0]
        dates: list[str] = DATE.findall(self.text)
        return max(dates, default="")


def split(text: str) -> tuple[str, list[Section]]:
    """Return the text before the first "## " heading, and each "## " section (code blocks are not looked into)."""
    parts = re.split(r"\n(?=## )", text)
    head, sections = parts[0], []
    for part in parts[1:]:
        body = part.rstrip("\n") + "\n"
        sections.append(Section(body.splitlines()[0], body))
    return head.rstrip("\n") + "\n", sections


def join(head: str, sections: list[Section]) -> str:
    return head + "".join("\n" + s.text for s in sections)


def insert(entries: list[Section], new: list[Section]) -> list[Section]:
    """Return ``entries`` (newest first) with ``new`` put in by date, a new one before the old ones of its date."""
    out = list(entries)
    for section in sorted(new, key=lambda s: s.date):  # oldest first, so later ones of a date come before it
        at = next((i for i, e in enumerate(out) if e.date <= section.date), len(out))
        out.insert(at, section)
    return out


def move(sources: list[Section], changelog: str, keep: set[str]) -> tuple[str, list[str], list[str]]:
    """Return the changelog with every section of ``sources`` it lacks (headings in ``keep`` left out), the headings
    moved, and those it has with another text."""
    head, entries = split(changelog)
    known = {e.heading: e.text for e in entries}
    new = [s for s in sources if s.heading not in known and s.heading not in keep]
    differ = [s.heading for s in sources if s.heading in known and known[s.heading] != s.text]
    return join(head, insert(entries, new)), [s.heading for s in new], differ


def main(argv: list[str]) -> int:
    readme = BENCH_README.read_text(encoding="utf-8")
    above, marker, below = readme.partition(MARKER)
    if not marker:
        print(f"{BENCH_README.relative_to(REPO)} has no {MARKER} marker", file=sys.stderr)
        return 2
    _, benches = split(above)
    if argv:
        sources = [s for path in argv for s in split(Path(path).read_text(encoding="utf-8"))[1]]
    else:
        sources = split(below)[1]
    text, moved, differ = move(sources, CHANGELOG.read_text(encoding="utf-8"), {b.heading for b in benches})
    CHANGELOG.write_text(text, encoding="utf-8")
    if not argv:
        BENCH_README.write_text(above + marker + "\n", encoding="utf-8")
    for heading in moved:
        print(f"moved: {heading}")
    for heading in differ:
        print(f"in the changelog with another text (merge by hand): {heading}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
