"""No import cycle between modules of ``src/kubesched``, over the whole import graph.

``lint-imports`` checks the layers between rooms; this checks every module against every other
(imports under ``TYPE_CHECKING`` and inside functions included, as grimp sees them), so a cycle
inside a room is caught too.  There is none: ``parallel/``, the last circle, imports as a tree
(the binder and its helpers depend on the Protocols of ``parallel/host.py``).
"""

from __future__ import annotations

import grimp


def strongly_connected(adjacency: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for root in sorted(adjacency):
        if root in index:
            continue
        work = [(root, iter(sorted(adjacency[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(adjacency.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [{"a", "b", "c"}]


def test_no_import_cycle() -> None:
    graph = grimp.build_graph("kubesched")
    adjacency = {
        m: set(graph.find_modules_directly_imported_by(m)) & graph.modules for m in graph.modules
    }
    assert [sorted(c) for c in strongly_connected(adjacency)] == []
