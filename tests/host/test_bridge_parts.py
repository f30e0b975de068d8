"""The bridge's parts and their imports: no part imports the daemon back (no import cycle inside the bridge
package, TYPE_CHECKING imports included), and the journal and its checkpoints are read without the daemon."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

BRIDGE = Path(__file__).resolve().parents[2] / "host" / "touchmove" / "bridge"


def bridge_imports() -> dict[str, set[str]]:
    """Return, per module of touchmove.bridge, the modules of touchmove.bridge it imports (anywhere in it)."""
    names = {f.stem for f in BRIDGE.glob("*.py") if f.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name in names:
        deps: set[str] = set()
        for node in ast.walk(ast.parse((BRIDGE / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "touchmove.bridge":
                deps |= {a.name for a in node.names if a.name in names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("touchmove.bridge."):
                deps.add(str(node.module).removeprefix("touchmove.bridge."))
        graph[name] = deps - {name}
    return graph


def test_no_part_of_the_bridge_imports_the_daemon_back() -> None:
    graph = bridge_imports()
    assert {name for name, deps in graph.items() if "daemon" in deps} == {"command"}
    # and no cycle at all among the bridge's modules
    seen: dict[str, int] = {}          # 1: on the path, 2: done

    def visit(name: str, path: list[str]) -> None:
        seen[name] = 1
        for dep in sorted(graph.get(name, set())):
            assert seen.get(dep) != 1, f"import cycle: {' -> '.join([*path, name, dep])}"
            if dep not in seen:
                visit(dep, [*path, name])
        seen[name] = 2

    for name in sorted(graph):
        if name not in seen:
            visit(name, [])


def test_the_journal_and_checkpoints_load_without_the_daemon_or_mqtt() -> None:
    code = ("import sys, touchmove.export, touchmove.bridge.journal, touchmove.bridge.checkpoint; "
            "print(sorted(m for m in ('aiomqtt', 'touchmove.bridge.daemon', 'touchmove.bridge.mqtt_link') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
