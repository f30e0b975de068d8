"""Finding one-line forwards in a class's source: a method or property whose whole body (its docstring aside) hands
the call on to one of the object's parts (``return self.part.x``, ``self.part.f(...)``, ``await self.part.f(...)``,
``self.part.x = value``). The wiring classes (the bridge, the broadcaster, the bridge's MQTT link) keep none: their
callers reach the part that does the work."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path


def _part_of(node: ast.expr, parts: frozenset[str]) -> str | None:
    """Return the part an expression reaches through (``self.<part>.…``, called or awaited), or None."""
    if isinstance(node, ast.Await):
        node = node.value
    if isinstance(node, ast.Call):
        node = node.func
    while isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
        node = node.value
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
            and node.attr in parts):
        return node.attr
    return None


def forwards(node: ast.FunctionDef | ast.AsyncFunctionDef, parts: Iterable[str]) -> str | None:
    """Return the part a method forwards to (its body, docstring aside, one statement that calls, returns or sets an
    attribute of one of ``parts``), or None."""
    names = frozenset(parts)
    body = [stmt for stmt in node.body
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))]
    if len(body) != 1:
        return None
    stmt = body[0]
    if isinstance(stmt, ast.Expr | ast.Return) and stmt.value is not None:
        return _part_of(stmt.value, names)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute):
        return _part_of(stmt.targets[0].value, names)  # a setter: self.part.x = value
    return None


def class_forwards(path: Path, class_name: str, parts: Iterable[str]) -> dict[str, str]:
    """Return the members of class ``class_name`` in the module at ``path`` that forward to one of ``parts``, each
    with the part it forwards to."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    return {n.name: part for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            if (part := forwards(n, parts)) is not None}
