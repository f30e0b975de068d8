"""The bridge's parts and their imports: no part imports the daemon back (no import cycle inside the bridge
package, TYPE_CHECKING imports included), and the journal and its checkpoints are read without the daemon; the
daemon wires the parts (each handed its collaborators, never the bridge) and forwards no calls to them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.forwarding import class_forwards
from touchmove.bridge import Bridge
from touchmove.config import BridgeConfig, MqttConfig, SerialConfig

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


#: The parts the daemon builds (attributes of a Bridge).
PARTS = ("mqtt", "publisher", "pipeline", "admission", "ports", "commands")
#: The daemon's own methods that hand a call on whole: its opening and closing (the pipeline's journal) and the MQTT
#: link's command callback (the commands).
OWN_CALLS = {"open", "close", "on_command"}


def test_the_daemon_wires_its_parts_and_forwards_nothing() -> None:
    found = class_forwards(BRIDGE / "daemon.py", "Bridge", PARTS)
    assert set(found) <= OWN_CALLS, f"one-line forwards to the parts: {sorted(set(found) - OWN_CALLS)}"


def test_no_part_is_handed_the_bridge(tmp_path: Path) -> None:
    cfg = BridgeConfig(MqttConfig(), SerialConfig(), journal=str(tmp_path / "j.sqlite3"))
    bridge = Bridge(cfg, session="parts")
    for name in PARTS:
        part = getattr(bridge, name)
        held = [attr for attr, value in vars(part).items() if value is bridge]
        assert held == [], f"bridge.{name} holds the bridge as {held}: it reaches the other parts back through it"
    # each part gets its collaborators themselves
    assert bridge.ports.pipeline is bridge.pipeline and bridge.ports.publisher is bridge.publisher
    assert bridge.ports.gate is bridge.admission and bridge.ports.clock is bridge.clock
    assert bridge.commands.pipeline is bridge.pipeline and bridge.commands.ports is bridge.ports
    assert bridge.commands.publisher is bridge.publisher and bridge.commands.replies is bridge.mqtt
    assert bridge.admission.alerts is bridge.pipeline and bridge.admission.state is bridge.publisher
