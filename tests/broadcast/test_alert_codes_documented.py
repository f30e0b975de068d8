"""Every alert code the product can raise has a row in the console's queue table (docs/console.md) at the rank
the dashboard gives it, and a meaning the console shows.

The codes are read from the code itself: the engine's :data:`~touchmove.rules.events.AlertCode`, the
broadcaster's rejections and its own alerts, and every literal code handed to the bridge's
``emit_bridge_alert`` or to an adapter's ``alert_line`` anywhere in ``host/touchmove``. A call passing a code
that is not a literal fails the test unless it is one of the known relays, so a new way of raising alerts cannot
slip past it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

from touchmove.broadcast.board_view import alert_meanings
from touchmove.broadcast.bridge_ingest import REJECTIONS
from touchmove.rules.events import AlertCode

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "host" / "touchmove"
#: Calls that raise an alert, and which positional argument is the code.
RAISERS = {"emit_bridge_alert": 1, "alert_line": 0}
#: The calls that pass a code on rather than name one: (file, source of the code argument).
RELAYS = {
    ("bridge/daemon.py", "code"),                     # the daemon's emit_bridge_alert, handing over to the pipeline
    ("bridge/ports.py", "msg.fields['alert']"),       # an adapter's alert_line, read back from the wire
}
CODE = re.compile(r"`([a-z_]+)`")


def _callee(call: ast.Call) -> str:
    """Return the called function's name (the attribute's name for a method)."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def raised_codes() -> tuple[set[str], list[str]]:
    """Return the alert codes the product can raise, and the calls whose code is neither a literal nor a relay."""
    codes: set[str] = set(get_args(AlertCode)) | set(REJECTIONS)
    unknown = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _callee(node) in RAISERS and len(node.args) > RAISERS[_callee(node)]:
                arg = node.args[RAISERS[_callee(node)]]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    codes.add(arg.value)
                elif (rel, ast.unparse(arg)) not in RELAYS:
                    unknown.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
            # the broadcaster's own alerts are events it makes: {"type": "alert", ..., "code": "<code>", ...}
            if isinstance(node, ast.Dict):
                fields = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
                          if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                code = fields.get("code")
                if "article" in fields and isinstance(code, ast.Constant) and isinstance(code.value, str):
                    codes.add(code.value)
    return codes, unknown


def queue_rows() -> dict[str, list[int]]:
    """Return the codes named in docs/console.md's queue table, each with the ranks its row gives."""
    text = (REPO / "docs" / "console.md").read_text(encoding="utf-8")
    table = text.split("| item | rank | leaves the queue when |", 1)[1].split("\n\n", 1)[0]
    rows: dict[str, list[int]] = {}
    for line in table.splitlines()[2:]:
        item, rank = line.split(" | ")[0], line.split(" | ")[1]
        # the codes a row is about come before any parenthesis, colon or link in its first cell
        head = re.split(r" \(|: |\[", item, maxsplit=1)[0]
        for code in CODE.findall(head):
            rows.setdefault(code, []).extend(int(n) for n in re.findall(r"\d+", rank))
    return rows


def dashboard_ranks() -> dict[str, int]:
    """Return the dashboard's ranks by alert code (its SEVERITY table)."""
    js = (PACKAGE / "broadcast" / "static" / "dashboard.js").read_text(encoding="utf-8")
    table = js.split("const SEVERITY = {", 1)[1].split("};", 1)[0]
    return {code: int(rank) for code, rank in re.findall(r"(\w+): (\d+)", table)}


def test_every_alert_raised_is_a_literal_code_or_a_known_relay() -> None:
    codes, unknown = raised_codes()
    assert not unknown, f"alerts raised with a code the test cannot read: {unknown}"
    # the scan finds the bridge's and the adapters' codes, not only the engine's
    assert {"square_flicker", "journal_replaced", "board_identity", "board_silent", "play_after_result"} <= codes


def test_every_alert_code_has_a_row_in_the_console_queue_at_the_dashboards_rank() -> None:
    codes, _ = raised_codes()
    rows, ranks = queue_rows(), dashboard_ranks()
    missing = sorted(codes - set(rows))
    assert not missing, f"alert codes without a row in docs/console.md's queue table: {missing}"
    wrong = {c: (rows[c], ranks.get(c, 60)) for c in codes if ranks.get(c, 60) not in rows[c]}
    assert not wrong, f"rows whose rank is not the dashboard's (row ranks, dashboard rank): {wrong}"
    assert not set(rows) - codes, f"rows for codes nothing raises: {sorted(set(rows) - codes)}"


def test_every_alert_code_has_a_meaning_in_the_console() -> None:
    codes, _ = raised_codes()
    without = sorted(codes - set(alert_meanings()))
    assert not without, f"alert codes the console has no meaning for: {without}"
