"""The package imports without cycles: its module graph, built from every import statement, has none.

The graph is read from the source with :mod:`ast`, so an import inside a function counts as much as one at the
top of a module: a cycle hidden behind a function-level import is still a cycle (two modules that cannot be
understood, tested or moved one without the other). Imports under ``if TYPE_CHECKING:`` do not count (they never
run); a module's ``if __name__ == "__main__":`` block counts (run with ``python -m``, a module that imports
something importing it back is loaded twice, under two names).

``importlib.import_module`` counts: with a literal name, that module; with ``f"{__name__}.{...}"`` in a package,
any module of the package; and the command line's subcommand table (``cli.SUBCOMMANDS``), whose modules ``cli``
imports only for the subcommand that runs (lazy, and still no cycle unless one of them imports ``cli`` back).
Importing a module also runs its parent packages' ``__init__``; that implicit step is not an edge: only what a
module's own statements name is. (Counted, it would tie every module outside a package that imports one of its
modules to whatever the package re-exports: ``touchmove.bridge`` loads any of its modules' names on first use.)

The same graph, read by **package**, has no cycle either: its subpackages (``touchmove.bridge``,
``touchmove.boards``, ``touchmove.serial`` ...) are the nodes, and ``bridge -> boards`` is an edge when a module of
``bridge`` imports one of ``boards``. Two packages importing each other's modules are one package in two folders,
even when no two modules import each other (``bridge/ports.py`` imported ``boards``, ``boards/link.py`` imported
``bridge/serial_link.py``: no module cycle, a package cycle). The package's top-level modules (``cli``,
``config`` ...) belong to no subpackage and are not nodes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import touchmove
from touchmove import cli

PACKAGE_DIR = Path(touchmove.__file__).parent
#: Links or folders inside the package that are not its Python modules (the firmware runs on MicroPython).
NOT_MODULES = ("firmware",)


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``line`` of its file."""

    source: str
    target: str
    line: int


def package_modules(root: Path = PACKAGE_DIR, name: str = "touchmove") -> dict[str, Path]:
    """Return every module of the package by dotted name (a package by its name, for its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[0] in NOT_MODULES:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join((name, *parts))] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _nodes_that_run(tree: ast.AST) -> Iterator[ast.AST]:
    """Yield every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """Return the longest prefix of ``name`` that is a module of the package, or None (outside it)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _is_import_module(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module")


def _targets_of_import_module(call: ast.Call, module: str, is_package: bool,
                              modules: dict[str, Path]) -> list[str]:
    if not call.args:
        return []
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        found = _known(arg.value, modules)
        return [found] if found else []
    if (is_package and isinstance(arg, ast.JoinedStr) and arg.values
            and isinstance(arg.values[0], ast.FormattedValue)
            and isinstance(arg.values[0].value, ast.Name) and arg.values[0].value.id == "__name__"):
        # f"{__name__}.{...}": one of the package's own modules, which one known only when it runs
        return [m for m in modules if m.rsplit(".", 1)[0] == module]
    return []


def module_imports(module: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    """Return the package modules ``module`` imports, from every statement that can run."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rsplit(".", 1)[0]
    edges: list[Edge] = []

    def add(target: str | None, line: int) -> None:
        if target is not None and target != module:
            edges.append(Edge(module, target, line))

    for node in _nodes_that_run(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(_known(alias.name, modules), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in modules else _known(base, modules), node.lineno)
        elif isinstance(node, ast.Call) and _is_import_module(node):
            for target in _targets_of_import_module(node, module, is_package, modules):
                add(target, node.lineno)
    return edges


def import_graph() -> dict[str, list[Edge]]:
    """Return each module's imports of the package's modules (the command line's subcommands included)."""
    modules = package_modules()
    graph = {name: module_imports(name, path, modules) for name, path in modules.items()}
    for _, subcommand, _ in cli.SUBCOMMANDS:
        graph[cli.__name__].append(Edge(cli.__name__, subcommand, 0))
    return graph


def strongly_connected(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """Return the graph's strongly connected sets of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[Edge]]] = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for edge in edges:
                if edge.target not in index:
                    index[edge.target] = low[edge.target] = len(index)
                    stack.append(edge.target)
                    on_stack.add(edge.target)
                    work.append((edge.target, iter(graph[edge.target])))
                    break
                if edge.target in on_stack:
                    low[node] = min(low[node], index[edge.target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1:
                        found.append(sorted(members))
    return found


def shortest_cycle(graph: dict[str, list[Edge]], members: list[str]) -> list[Edge]:
    """Return a shortest cycle through the first of ``members`` (a strongly connected set), edge by edge."""
    inside = set(members)
    start = members[0]
    came_by: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for edge in graph[node]:
                if edge.target not in inside:
                    continue
                if edge.target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, came_by[path[0].source])
                    return path
                if edge.target not in came_by:
                    came_by[edge.target] = edge
                    following.append(edge.target)
        frontier = following
    raise AssertionError(f"{members} is not strongly connected")


def describe_cycle(cycle: list[Edge]) -> str:
    return " -> ".join(f"{e.source} (line {e.line})" for e in cycle) + f" -> {cycle[0].source}"


def subpackage_of(module: str, modules: dict[str, Path]) -> str | None:
    """Return the subpackage of the root package ``module`` is in (``a.b`` for ``a.b.c`` and for ``a.b``
    itself), or None for the root and its top-level modules."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    package = ".".join(parts[:2])
    return package if modules[package].name == "__init__.py" else None


def package_graph(graph: dict[str, list[Edge]], modules: dict[str, Path]) -> tuple[dict[str, list[Edge]],
                                                                                    dict[tuple[str, str], Edge]]:
    """Return the graph of subpackages (an edge ``a -> b`` when a module of ``a`` imports one of ``b``; its line
    that of the first such import) and, for each edge, that import between modules (to name it in a failure)."""
    packages: dict[str, list[Edge]] = {}
    found_by: dict[tuple[str, str], Edge] = {}
    for module, edges in graph.items():
        source = subpackage_of(module, modules)
        if source is None:
            continue
        packages.setdefault(source, [])
        for edge in edges:
            target = subpackage_of(edge.target, modules)
            if target is None or target == source or (source, target) in found_by:
                continue
            packages.setdefault(target, [])
            packages[source].append(Edge(source, target, edge.line))
            found_by[source, target] = edge
    return packages, found_by


def package_cycles(graph: dict[str, list[Edge]], modules: dict[str, Path]) -> list[str]:
    """Return each cycle of the subpackages' graph, said with the module imports that make it."""
    packages, found_by = package_graph(graph, modules)
    said: list[str] = []
    for members in strongly_connected(packages):
        cycle = shortest_cycle(packages, members)
        steps = ", ".join(f"{found_by[e.source, e.target].source} imports {found_by[e.source, e.target].target} "
                          f"(line {e.line})" for e in cycle)
        said.append(" -> ".join(e.source for e in cycle) + f" -> {cycle[0].source}: {steps}")
    return said


def test_the_graph_sees_imports_inside_functions_and_not_type_checking_ones(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "low.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.high import High\nelse:\n    from pkg import other\n"
        "def f():\n    from pkg.high import g\n    return g\n")
    (tmp_path / "pkg" / "high.py").write_text("from . import low\nimport importlib\n"
                                              "def g():\n    return importlib.import_module('pkg.other')\n")
    (tmp_path / "pkg" / "other.py").write_text("")
    modules = package_modules(tmp_path / "pkg", "pkg")
    graph = {name: module_imports(name, path, modules) for name, path in modules.items()}
    assert {(e.target, e.line) for e in graph["pkg.low"]} == {("pkg.other", 5), ("pkg.high", 7)}
    assert {e.target for e in graph["pkg.high"]} == {"pkg.low", "pkg.other"}
    [cycle] = strongly_connected(graph)
    assert cycle == ["pkg.high", "pkg.low"]
    assert describe_cycle(shortest_cycle(graph, cycle)) == "pkg.high (line 1) -> pkg.low (line 7) -> pkg.high"


def test_a_package_cycle_is_seen_where_no_module_cycle_is(tmp_path: Path) -> None:
    """The old layout in small: a module of ``a`` imports one of ``b``, another of ``b`` one of ``a``."""
    for folder in ("pkg", "pkg/a", "pkg/b", "pkg/c"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a" / "ports.py").write_text("from pkg.b import link\n")
    (tmp_path / "pkg" / "a" / "serial_link.py").write_text("")
    (tmp_path / "pkg" / "b" / "link.py").write_text("\nfrom pkg.a.serial_link import SerialLink\n")
    (tmp_path / "pkg" / "c" / "user.py").write_text("from pkg.a import ports\nfrom pkg.b import link\n")
    (tmp_path / "pkg" / "top.py").write_text("from pkg.c import user\n")   # a top-level module: no node
    modules = package_modules(tmp_path / "pkg", "pkg")
    graph = {name: module_imports(name, path, modules) for name, path in modules.items()}
    assert not strongly_connected(graph), "no module imports one that imports it back"
    packages, _ = package_graph(graph, modules)
    assert {p: sorted(e.target for e in edges) for p, edges in packages.items()} == {
        "pkg.a": ["pkg.b"], "pkg.b": ["pkg.a"], "pkg.c": ["pkg.a", "pkg.b"]}
    assert package_cycles(graph, modules) == [
        "pkg.a -> pkg.b -> pkg.a: pkg.a.ports imports pkg.b.link (line 1), "
        "pkg.b.link imports pkg.a.serial_link (line 2)"]
    (tmp_path / "pkg" / "b" / "link.py").write_text("\nfrom pkg.c import user\n")   # b -> c -> a -> b
    graph = {name: module_imports(name, path, modules) for name, path in modules.items()}
    assert package_cycles(graph, modules) == [
        "pkg.a -> pkg.b -> pkg.c -> pkg.a: pkg.a.ports imports pkg.b.link (line 1), "
        "pkg.b.link imports pkg.c.user (line 2), pkg.c.user imports pkg.a.ports (line 1)"]


def test_the_command_line_loads_its_subcommands_lazily_and_none_imports_it_back() -> None:
    graph = import_graph()
    own = {e.target for e in graph["touchmove.cli"] if e.line}      # its import statements (line 0: the table)
    assert own <= {"touchmove", "touchmove.errors"}, "cli.py imports only what every command needs"
    assert {e.target for e in graph["touchmove.cli"] if not e.line} == {m for _, m, _ in cli.SUBCOMMANDS}


def test_no_import_cycles() -> None:
    graph = import_graph()
    cycles = [f"{describe_cycle(shortest_cycle(graph, members))}\n  (the modules tied together: {', '.join(members)})"
              for members in strongly_connected(graph)]
    assert not cycles, "import cycles in the package:\n" + "\n".join(cycles)


def test_no_package_cycles() -> None:
    cycles = package_cycles(import_graph(), package_modules())
    assert not cycles, "import cycles between the package's subpackages:\n" + "\n".join(cycles)
