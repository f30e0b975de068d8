"""A bench's figures as data: one JSON file per bench under ``bench/figures/``.

Every bench script makes a :class:`Run` when it starts (the load average, the date and the commit are taken
then), adds each figure it prints (:meth:`Run.add`) and writes the file at its end (:meth:`Run.write`, the load
average taken again). The file holds what a figure needs to be read later: the commit (``+dirty`` when the
working tree had changes outside ``bench/figures/``), the UTC date, the machine (cores, CPU model, Python), the
load average at the start and at the end, and the command line. ``bench/tables.py`` makes the tables of
bench/README.md and the README from these files.

A figure is a value with its unit, named by its column (``name``) and, where a bench measures several cases in
one run, its row (``group``: "1,000 boards", "square changes only").
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIGURES_DIR = REPO / "bench" / "figures"
#: where a run writes instead of bench/figures/ (the tests, or a run that must not replace the committed figures)
DIR_ENV = "TOUCHMOVE_FIGURES_DIR"
MEASURED = "measured"

Number = int | float
#: a list of numbers as json.dumps(indent=1) spreads it over lines (the load averages), to be put on one line
NUMBERS = re.compile(r"\[\s*(-?[\d.]+(?:,\s*-?[\d.]+)*)\s*\]")


@dataclass(frozen=True)
class Figure:
    name: str
    value: Number | str
    unit: str = ""
    group: str = ""


def commit(repo: Path = REPO) -> str:
    """Return the short commit of ``repo``'s HEAD, with ``+dirty`` if a file outside bench/figures/ differs from it
    (untracked files included); ``unknown`` outside a git working tree."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--", ".",
                                 ":(exclude)bench/figures"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if status.strip() else "")


def cpu_model() -> str:
    """Return the CPU's model name as /proc/cpuinfo gives it (else what ``platform`` knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    return {"cores": os.cpu_count(), "cpu": cpu_model(), "python": platform.python_version()}


def load() -> list[float]:
    """Return the load average over 1, 5 and 15 minutes."""
    return [round(x, 2) for x in os.getloadavg()]


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def command_line(argv: list[str]) -> str:
    """Return the command as it would be typed from the repository's top (the script's path relative to it)."""
    if not argv or not argv[0].endswith(".py"):
        return " ".join(argv)
    script = Path(argv[0])
    try:
        shown = str(script.resolve().relative_to(REPO))
    except ValueError:
        shown = argv[0]
    return " ".join(["python", shown, *argv[1:]])


@dataclass
class Run:
    """One run of a bench: its figures and what they were measured on."""

    bench: str
    argv: list[str] = field(default_factory=lambda: list(sys.argv))
    repo: Path = REPO
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.date = utc_now()
        self.commit = commit(self.repo)
        self.load_start = load()

    def add(self, name: str, value: Number | str, unit: str = "", group: str = "") -> None:
        if isinstance(value, float) and value != value:  # NaN: JSON has no such number
            value = "n/a"
        self.figures.append(Figure(name, value, unit, group))

    def add_latency(self, stats: dict[str, Any], group: str) -> None:
        """Add a latency's ``p50``, ``p99`` and ``max`` (ms, to 0.1) from a bench's result row."""
        for name in ("p50", "p99", "max"):
            self.add(name, round(stats[name], 1), "ms", group=group)

    def note(self, text: str) -> None:
        """Keep a remark the bench printed beside its figures (a goal not met, a case not measured)."""
        self.notes.append(text)

    def document(self) -> dict[str, Any]:
        return {
            "bench": self.bench,
            "source": MEASURED,
            "commit": self.commit,
            "date": self.date,
            "machine": machine(),
            "load": {"start": self.load_start, "end": load()},
            "command": command_line(self.argv),
            "notes": self.notes,
            "figures": [{"name": f.name, "value": f.value, "unit": f.unit, "group": f.group} for f in self.figures],
        }

    def write(self, directory: Path | None = None) -> Path:
        """Write the figures to ``<directory>/<bench>.json`` (bench/figures/, or $TOUCHMOVE_FIGURES_DIR)."""
        where = directory or Path(os.environ.get(DIR_ENV) or FIGURES_DIR)
        where.mkdir(parents=True, exist_ok=True)
        path = where / f"{self.bench}.json"
        path.write_text(dumps(self.document()), encoding="utf-8")
        print(f"figures written to {display(path)}", flush=True)
        return path


def dumps(doc: dict[str, Any]) -> str:
    """Return ``doc`` as JSON text, each figure on a line of its own (a run's diff reads figure by figure)."""
    head = json.dumps({k: v for k, v in doc.items() if k != "figures"}, indent=1, ensure_ascii=False)
    head = NUMBERS.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", head)
    rows = ",\n".join("  " + json.dumps(f, ensure_ascii=False) for f in doc.get("figures", []))
    return head[:-2] + ',\n "figures": [\n' + rows + "\n ]\n}\n"


def display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def read(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc
