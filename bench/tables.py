"""The figures tables of bench/README.md and the README, made from bench/figures/*.json.

A table sits between two markers: ``<!-- figures:NAME -->`` and ``<!-- /figures -->``. In bench/README.md NAME is
a bench (bench/figures/NAME.json: the whole run, one row per case, and what it was measured on); in the README it
is ``readme``: one line per bench, chosen in :data:`README_ROWS`. Whatever is between the markers is rewritten;
the rest of the page is left as it is.

    python bench/tables.py           # rewrite the tables (make bench-tables)
    python bench/tables.py --check   # exit 1 if a table differs from its JSON (the tests do the same)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from figures import FIGURES_DIR, MEASURED, REPO, read

PAGES = (REPO / "bench" / "README.md", REPO / "README.md")
BLOCK = re.compile(r"(<!-- figures:([\w-]+) -->\n)(.*?)(<!-- /figures -->)", re.S)

Doc = dict[str, Any]


def number(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1000:
        value = int(value)
    return f"{value:,}"


def cell(value: object, unit: str) -> str:
    """Return a value with its unit ("68% of a core", "206.4 ms", "1,426")."""
    if not unit:
        return number(value)
    return number(value) + ("" if unit.startswith("%") else " ") + unit


def find(doc: Doc, group: str, name: str) -> str:
    """Return the cell of figure ``name`` in row ``group`` (KeyError if the run has no such figure)."""
    for f in doc["figures"]:
        if f["group"] == group and f["name"] == name:
            return cell(f["value"], f["unit"])
    raise KeyError(f"{doc['bench']}: no figure {name!r} in {group!r}")


def table(doc: Doc) -> list[str]:
    """Return a run's figures as a Markdown table: a row per group, a column per name (in the order added)."""
    groups: list[str] = []
    names: list[str] = []
    cells: dict[tuple[str, str], str] = {}
    for f in doc["figures"]:
        if f["group"] not in groups:
            groups.append(f["group"])
        if f["name"] not in names:
            names.append(f["name"])
        cells[(f["group"], f["name"])] = cell(f["value"], f["unit"])
    if groups == [""]:
        return ["| figure | value |", "|---|---|", *(f"| {n} | {cells[('', n)]} |" for n in names)]
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for g in groups:
        lines.append(f"| {g or 'all'} | " + " | ".join(cells.get((g, n), "–") for n in names) + " |")
    return lines


def loads(doc: Doc) -> str:
    start, end = doc["load"].get("start"), doc["load"].get("end")
    if not start:
        return "load not recorded"
    if doc.get("source", MEASURED) != MEASURED:  # the diary gave a range over the run, not its two ends
        return f"load average {start[0]:g}" + (f"–{end[0]:g}" if end and end[0] != start[0] else "")
    return f"load average {start[0]:g} at the start, {end[0]:g} at the end" if end else f"load average {start[0]:g}"


def provenance(doc: Doc) -> str:
    """Return the line that says how, when, where and on what code a run was measured."""
    machine = doc.get("machine", {})
    where = f"{machine.get('cores', '?')} cores ({machine.get('cpu', '?')})"
    if machine.get("python"):
        where += f", Python {machine['python']}"
    when = doc["date"].replace("T", " ").replace("Z", " UTC")  # a transcribed date may have no time
    if doc.get("source", MEASURED) != MEASURED:
        return (f"**Not measured by the script:** {doc['source']}; the next run of the bench replaces it. "
                f"`{doc['command']}`, {when}, {loads(doc)}, {where}.")
    return f"`{doc['command']}`, {when}, at `{doc['commit']}`, {loads(doc)}, {where}."


def bench_block(doc: Doc) -> str:
    notes = [f"- {n}" for n in doc.get("notes", [])]
    return "\n".join([*table(doc), "", provenance(doc), *(["", *notes] if notes else [])]) + "\n"


@dataclass(frozen=True)
class ReadmeRow:
    what: str | Callable[[Doc], str]  # a callable where the case measured comes from the run (its boards)
    bench: str
    figure: Callable[[Doc], str]


#: The README's short table: what is measured, and the figure from the bench's JSON.
README_ROWS: tuple[ReadmeRow, ...] = (
    ReadmeRow(lambda d: f"replay, the engine alone on one core, square changes only "
                        f"({find(d, 'changes only', 'games')} shared games)", "replay_throughput",
              lambda d: f"{find(d, 'changes only', 'engine')}; with heartbeats "
                        f"{find(d, 'with heartbeats', 'engine')}"),
    ReadmeRow("games given back exactly with each harder habit of the hands model", "hand_styles",
              lambda d: hand_styles_summary(d)),
    ReadmeRow("games given back exactly after 0.5–8 s of lost records", "lost_data",
              lambda d: f"{find(d, 'all', 'back exactly')} of {find(d, 'all', 'games')} (one explanation: "
                        f"{find(d, 'one explanation', 'back exactly')} of {find(d, 'one explanation', 'games')}), "
                        f"`illegal_move` {find(d, 'all', '`illegal_move` alerts')}"),
    ReadmeRow("lost records at blitz pace (2–8 s windows)", "lost_data_blitz",
              lambda d: f"{find(d, 'all', 'back exactly')} of {find(d, 'all', 'games')} back exactly"),
    ReadmeRow("crash while the disk is full (killed, space back, restart)", "crash_while_full",
              lambda d: "; ".join(f"{g}: {find(d, g, 'lost nothing')} of {find(d, g, 'runs')} lost nothing"
                                  for g in groups(d))),
    ReadmeRow("bridge, place → published move (200 ms settle included), 1,000 boards", "bridge_latency",
              lambda d: f"p50 {find(d, '1,000 boards', 'p50')}, p99 {find(d, '1,000 boards', 'p99')}, "
                        f"{find(d, '1,000 boards', 'daemon CPU')}"),
    ReadmeRow("bridge beside six vendor boards flooding it (200 messages/s each), 20 boards", "bridge_latency_flood",
              lambda d: f"p50 {find(d, '20 boards', 'p50')}, p99 {find(d, '20 boards', 'p99')}, "
                        f"lost {find(d, '20 boards', 'lost')}"),
    ReadmeRow("bridge restart from its signed checkpoints (the whole journal replayed)", "restart_time",
              lambda d: f"after {groups(d)[-1]}: {find(d, groups(d)[-1], 'restart, checkpoints')} "
                        f"({find(d, groups(d)[-1], 'restart, whole journal')})"),
    ReadmeRow(lambda d: f"broadcast, move → round PGN served, {find(d, 'moves', 'boards')} boards", "broadcast_latency",
              lambda d: f"p50 {find(d, 'move event → round PGN served', 'p50')}, "
                        f"p99 {find(d, 'move event → round PGN served', 'p99')}"),
    ReadmeRow(lambda d: f"console, move → on screen, {find(d, '', 'boards')} boards at {find(d, '', 'moves a second')} "
                        "moves/s (Chromium)", "dashboard_latency",
              lambda d: f"p50 {find(d, '', 'move → on screen, p50')}, p99 {find(d, '', 'move → on screen, p99')}"),
    ReadmeRow("LiveChess feed, placement → client, 20 boards, 10 clients", "livechess_latency_placement",
              lambda d: p50_p99(d, "20 boards, 10 clients")),
    ReadmeRow(lambda d: f"cluster (3 NATS nodes, events at QoS 0), {find(d, groups(d)[0], 'boards')} boards, each kind "
                        "of node killed in turn: moves placed while a node was down", "cluster_latency",
              lambda d: cluster_summary(d)),
    ReadmeRow("vendor boards (emulated), default hands: games given back exactly", "boards",
              lambda d: "; ".join(f"{g.split(',')[0]} {find(d, g, 'exact')} of {games_counted(d, g)}"
                                  for g in groups(d) if g.endswith("default hands"))),
    ReadmeRow("vendor boards (emulated), harder hands: exact / recovered / wrong then an alert / wrong, no alert",
              "boards_harder", lambda d: "; ".join(f"{g.split(',')[0]} {harder_summary(d, g)}" for g in groups(d))),
    ReadmeRow("firmware on the emulated Pico (125 MHz): magnet → USB line, median", "firmware_pico",
              lambda d: ", ".join(f"{g} {find(d, g, 'magnet → USB line, median')}" for g in groups(d))),
)


def p50_p99(doc: Doc, group: str) -> str:
    return f"p50 {find(doc, group, 'p50')}, p99 {find(doc, group, 'p99')}"


#: bench/boards.py counts each game once, by how it ends
ENDINGS = ("exact", "recovered", "changes_lost", "board_mismatch", "illegal_move", "other alert", "wrong")


def harder_summary(doc: Doc, group: str) -> str:
    """Return a case's games as exact / recovered / wrong then an alert / wrong without, of how many."""
    alerted = sum(find_value(doc, group, name) or 0 for name in ENDINGS[2:-1])
    return (f"{find(doc, group, 'exact')} / {find(doc, group, 'recovered')} / {int(alerted)} / "
            f"{find(doc, group, 'wrong')} of {games_counted(doc, group)}")


def games_counted(doc: Doc, group: str) -> int:
    return int(sum(find_value(doc, group, name) or 0 for name in ENDINGS))


def groups(doc: Doc) -> list[str]:
    out: list[str] = []
    for f in doc["figures"]:
        if f["group"] not in out:
            out.append(f["group"])
    return out


def hand_styles_summary(doc: Doc) -> str:
    rows = [(g, find(doc, g, "exact"), find(doc, g, "games")) for g in groups(doc)]
    every = all(exact == games for _, exact, games in rows)
    counts = sorted({games for _, _, games in rows})
    head = f"{len(rows)} kinds, {'/'.join(counts)} games each: " + ("all exact" if every else "")
    return head + "; ".join(f"{g} {exact}" for g, exact, games in rows if exact != games)


def cluster_summary(doc: Doc) -> str:
    """The moves placed while each node was down: the range of their p99 over the kills, and the loss."""
    down = [g for g in groups(doc) if " was down " in g and find_value(doc, g, "p99") is not None]
    p99 = sorted((find_value(doc, g, "p99") or 0.0) / 1000 for g in down)
    whole = groups(doc)[0]
    return (f"p99 {p99[0]:.2f}–{p99[-1]:.2f} s over {len(down)} kills; {find(doc, whole, 'lost')} lost, "
            f"{find(doc, whole, 'duplicated')} duplicated of {find(doc, whole, 'moves')} moves")


def find_value(doc: Doc, group: str, name: str) -> float | None:
    value = next((f["value"] for f in doc["figures"] if f["group"] == group and f["name"] == name), None)
    return float(value) if isinstance(value, int | float) else None


def readme_block(docs: dict[str, Doc]) -> str:
    lines = ["| what | figure | measured |", "|---|---|---|"]
    for row in README_ROWS:
        doc = docs.get(row.bench)
        if doc is None:
            continue
        try:
            what = row.what if isinstance(row.what, str) else row.what(doc)
            figure = row.figure(doc)
        except (KeyError, IndexError):  # a run of other cases (fewer boards, other hands) than the row quotes
            what = row.what if isinstance(row.what, str) else row.bench
            figure = f"not in the last run (`{doc['command']}`)"
        lines.append(f"| {what} | {figure} | {when(doc)} |")
    return "\n".join(lines) + "\n"


def when(doc: Doc) -> str:
    """The README's "measured" column: the date, and the load average (1 minute) at the start and the end."""
    start, end = doc["load"].get("start"), doc["load"].get("end")
    load = f"{start[0]:g}" + (f"–{end[0]:g}" if end and end[0] != start[0] else "") if start else "?"
    return f"{doc['date'][:10]}, load {load}" + ("" if doc.get("source", MEASURED) == MEASURED else ", transcribed")


def load_docs(directory: Path = FIGURES_DIR) -> dict[str, Doc]:
    return {path.stem: read(path) for path in sorted(directory.glob("*.json"))}


def render(text: str, docs: dict[str, Doc]) -> str:
    """Return ``text`` with every figures block made again from ``docs``."""
    def block(match: re.Match[str]) -> str:
        name = match.group(2)
        if name == "readme":
            body = readme_block(docs)
        elif name in docs:
            body = bench_block(docs[name])
        else:
            body = (f"*No figures yet: the next run of the bench writes bench/figures/{name}.json, then "
                    "`make bench-tables`.*\n")
        return match.group(1) + body + match.group(4)
    return BLOCK.sub(block, text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which tables differ from their JSON")
    args = parser.parse_args()
    docs = load_docs()
    stale = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        new = render(text, docs)
        if new != text:
            stale.append(page.relative_to(REPO))
            if not args.check:
                page.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"tables differ from bench/figures/*.json: {', '.join(map(str, stale))} (make bench-tables)")
        return 1
    print(f"{'rewrote' if stale else 'unchanged'}: {', '.join(map(str, stale)) or 'every table'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
