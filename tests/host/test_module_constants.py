"""A module constant is bound once: a second ``MAX_ORDERS = ...`` further down a module silently changes what
every function above it reads (the recovery search kept 2,000 orders per position instead of 4 that way)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import touchmove

PACKAGE = Path(touchmove.__file__).parent


def top_level_constants(tree: ast.Module) -> Counter[str]:
    """Return how often each upper-case name is bound by a statement at the top level of a module."""
    names: Counter[str] = Counter()
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper():
                names[target.id] += 1
    return names


def test_no_module_binds_a_constant_twice() -> None:
    twice = {f"{path.relative_to(PACKAGE)}: {name}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for name, count in top_level_constants(ast.parse(path.read_text())).items() if count > 1}
    assert not twice


def test_the_check_sees_a_constant_bound_twice() -> None:
    assert top_level_constants(ast.parse("MAX = 4\nx = 1\nMAX = 2_000\n"))["MAX"] == 2
