"""The `%%rust` bridge's modules import in one direction: no cycle among `python/tchbook/bridge/`'s
modules, counting every relative import (those under `TYPE_CHECKING` and inside functions too)."""
from __future__ import annotations

import ast
from pathlib import Path

BRIDGE = Path(__file__).resolve().parent.parent / "python" / "tchbook" / "bridge"


def edges() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in BRIDGE.glob("*.py"):
        module = path.stem
        targets = found.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    targets.add(node.module.split(".")[0])
                else:  # `from . import x`
                    targets.update(alias.name for alias in node.names)
        targets.discard(module)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                found.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_the_scan_sees_the_bridges_imports():
    graph = edges()
    assert "cell" in graph.get("kernel", set()), graph


def test_the_bridges_modules_import_without_cycles():
    assert cycles(edges()) == []


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
