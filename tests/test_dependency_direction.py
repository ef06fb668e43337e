"""Imports point one way (docs/architecture.md, "Dependency direction"), read from every module's own import
statements, so a new edge against the direction, or one that closes a cycle, fails here before a reader of the
doc meets it.

Three checks over the eight workspace packages (the three libraries under shared/: `strata_core`,
`strata_metastore`, `strata_frame`; the three APIs; `strata_jobs`; `strata_services`):

- **No import cycle**, between modules, between packages (a package is a module name's first two levels:
  `strata_metastore.repositories`, `strata_indexer.services`, `strata_jobs.merge`) nor between the workspace
  packages themselves. The graph holds the imports that run:
  at any level, inside functions too, but not those under `if TYPE_CHECKING:`, which never run. A cycle is broken by
  moving code to where it belongs (a type both sides need moves down, a function the lower side uses moves there),
  never by moving the import into a function, which this test sees anyway.
- **The direction the document states**, package by package: the core imports neither the metastore nor the
  frame, nor the web stack, the database or Spark; the metastore imports the core only (plus SQLAlchemy, asyncpg
  and Alembic); the frame may import both; strata_jobs imports the core only. These rules count every import,
  those under `if TYPE_CHECKING:` included: a type from another API is still a dependency on it.
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "strata_core": ROOT / "shared" / "core" / "src" / "strata_core",
    "strata_metastore": ROOT / "shared" / "metastore" / "src" / "strata_metastore",
    "strata_frame": ROOT / "shared" / "frame" / "src" / "strata_frame",
    "strata_indexer": ROOT / "indexer-api" / "src" / "strata_indexer",
    "strata_planner": ROOT / "planner-api" / "src" / "strata_planner",
    "strata_query": ROOT / "query-api" / "src" / "strata_query",
    "strata_jobs": ROOT / "spark-jobs" / "src" / "strata_jobs",
    "strata_services": ROOT / "services" / "src" / "strata_services",
}
APIS = ("strata_indexer", "strata_planner", "strata_query")
LIBRARIES = ("strata_core", "strata_metastore", "strata_frame")
# What the core never imports, at any depth of a name: the web stack, the database and its migrations, Spark (and
# the instrumentations that load the web stack and the database).
NOT_IN_THE_CORE = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "asyncpg", "alembic", "pyspark",
                   "opentelemetry.instrumentation.fastapi", "opentelemetry.instrumentation.sqlalchemy")
# All the metastore imports besides the standard library and the core.
METASTORE_THIRD_PARTY = ("sqlalchemy", "asyncpg", "alembic", "ulid")
# Besides the standard library and strata_core: "plus pyarrow, numpy and python-ulid".
JOBS_THIRD_PARTY = ("pyarrow", "numpy", "ulid")
# Only these use the Spark session they are handed; the merge and artifact-build kernels know nothing of Spark.
JOBS_SPARK_MODULES = ("strata_jobs.spark_tasks", "strata_jobs.spark_merge", "strata_jobs.spark_index",
                      "strata_jobs.pruned_scan")
# What "free of FastAPI and SQLAlchemy" and "never touches the database" exclude from all strata_jobs loads.
WEB_AND_DATABASE = ("fastapi", "sqlalchemy", "asyncpg")
# Each API imports the strata_jobs entry points of the work it submits, and no other.
JOBS_ENTRY_POINTS_OF = {
    "strata_planner": {"strata_jobs.merge", "strata_jobs.spark_merge"},
    "strata_indexer": {"strata_jobs.index_build", "strata_jobs.spark_index"},
    "strata_query": {"strata_jobs.pruned_scan"},
}


@dataclass(frozen=True, slots=True)
class Import:
    name: str  # absolute dotted name as imported: a module, or for `from m import x` m.x when that is a module
    line: int
    type_checking: bool  # under `if TYPE_CHECKING:`: never runs


@dataclass(frozen=True, slots=True)
class Edge:
    importer: str
    imported: str
    where: str  # path:line of the import statement

    def __str__(self) -> str:
        return f"{self.importer} imports {self.imported} ({self.where})"


# --- reading the sources --------------------------------------------------------------------------------------


def module_name(package: str, path: Path) -> str:
    parts = list(path.relative_to(PACKAGES[package]).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


@cache
def sources() -> dict[str, Path]:
    """Every module of the six packages, by dotted name."""
    return {module_name(package, path): path for package, directory in PACKAGES.items()
            for path in sorted(directory.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def read_imports(source: str, module: str, is_package: bool, known: Iterable[str] = ()) -> list[Import]:
    """Every import statement of `source` (the module `module`), at any depth, resolved to absolute names.
    `known` are the modules `from pkg import name` may name (then the import is of `pkg.name`)."""
    known = set(known)
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, type_checking: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_checking)
            return
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, node.lineno, type_checking) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                name = f"{base}.{alias.name}"
                found.append(Import(name if name in known else base, node.lineno, type_checking))
        for child in ast.iter_child_nodes(node):
            visit(child, type_checking)

    visit(ast.parse(source), False)
    return found


@cache
def imports() -> dict[str, tuple[Import, ...]]:
    known = set(sources())
    return {module: tuple(read_imports(path.read_text(), module, path.name == "__init__.py", known))
            for module, path in sources().items()}


def workspace_module(name: str) -> str | None:
    """The workspace module an imported name loads (the longest known prefix: `m.function` is `m`), or None."""
    while name:
        if name in sources():
            return name
        name = name.rpartition(".")[0]
    return None


def where(module: str, line: int) -> str:
    return f"{sources()[module].relative_to(ROOT)}:{line}"


def top(name: str) -> str:
    return name.split(".")[0]


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def within(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


# --- the graphs and their cycles ------------------------------------------------------------------------------


@cache
def module_graph() -> dict[str, dict[str, Edge]]:
    """Module -> the workspace modules it imports at run time, each with its first import statement."""
    graph: dict[str, dict[str, Edge]] = {module: {} for module in sources()}
    for module, found in imports().items():
        for item in found:
            target = workspace_module(item.name)
            if item.type_checking or target is None or target == module:
                continue
            graph[module].setdefault(target, Edge(module, target, where(module, item.line)))
    return graph


@cache
def package_graph() -> dict[str, dict[str, Edge]]:
    """Package -> the packages it imports, each with one module import that makes the edge."""
    graph: dict[str, dict[str, Edge]] = {package_of(module): {} for module in sources()}
    for module, targets in module_graph().items():
        for target, edge in targets.items():
            if package_of(target) != package_of(module):
                graph[package_of(module)].setdefault(package_of(target), edge)
    return graph


def strongly_connected(graph: dict[str, Iterable[str]]) -> list[list[str]]:
    """The components of more than one node (Tarjan, iterative), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components)


def _shortest_path(graph: dict[str, Iterable[str]], start: str, goal: str, allowed: set[str]) -> list[str]:
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [node]
            while previous[path[-1]] is not None:
                path.append(previous[path[-1]])
            return path[::-1]
        for successor in sorted(graph.get(node, ())):
            if successor in allowed and successor not in previous:
                previous[successor] = node
                queue.append(successor)
    raise AssertionError(f"no path from {start} to {goal} inside its component")


def cycles(graph: dict[str, Iterable[str]]) -> list[list[str]]:
    """Cycles that together use every edge inside a strongly connected component, each once, shortest first:
    [a, b, ..., a]. Empty when the graph has none."""
    found: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for component in strongly_connected(graph):
        members = set(component)
        covered: set[tuple[str, str]] = set()
        for node in component:
            for successor in sorted(set(graph[node]) & members):
                if (node, successor) in covered:
                    continue
                cycle = [node, *_shortest_path(graph, successor, node, members)]
                covered.update(zip(cycle, cycle[1:], strict=False))
                rotation = cycle[:-1]
                first = rotation.index(min(rotation))
                key = tuple(rotation[first:] + rotation[:first])
                if key not in seen:
                    seen.add(key)
                    found.append([*key, key[0]])
    return sorted(found, key=lambda c: (len(c), c))


def describe(cycle: list[str], graph: dict[str, dict[str, Edge]]) -> str:
    steps = [cycle[0]]
    for importer, imported in zip(cycle, cycle[1:], strict=False):
        edge = graph[importer][imported]
        via = "" if (edge.importer, edge.imported) == (importer, imported) else \
            f": {edge.importer} imports {edge.imported}"
        steps.append(f"  -> {imported}   ({edge.where}{via})")
    return "\n".join(steps)


# --- the checker checked --------------------------------------------------------------------------------------


def test_the_reader_sees_imports_in_functions_and_relative_ones_but_not_type_checking_ones():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import a.b\n"
        "from . import sibling\n"
        "from ..up import thing\n"
        "if TYPE_CHECKING:\n"
        "    from c import D\n"
        "else:\n"
        "    import e\n"
        "def f():\n"
        "    from g.h import i\n"
    )
    found = {(i.name, i.type_checking) for i in read_imports(source, "p.q.m", False, known={"p.q.sibling"})}
    assert found == {("typing", False), ("a.b", False), ("p.q.sibling", False), ("p.up", False), ("c", True),
                     ("e", False), ("g.h", False)}


def test_the_cycle_finder_names_every_cycle_as_a_chain():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"g"}}
    assert cycles(graph) == [["e", "f", "e"], ["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    # Two cycles through one node: both are named, so each offending import is shown.
    assert cycles({"a": {"b", "c"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"], ["a", "c", "a"]]


def test_every_package_is_scanned():
    for package, directory in PACKAGES.items():
        assert any(top(module) == package for module in sources()), f"no source found for {package} under {directory}"


# --- no cycles ------------------------------------------------------------------------------------------------


def test_no_import_cycle_between_modules():
    graph = module_graph()
    found = [describe(cycle, graph) for cycle in cycles(graph)]
    assert not found, "import cycles between modules:\n\n" + "\n\n".join(found)


def test_no_import_cycle_between_packages():
    graph = package_graph()
    found = [describe(cycle, graph) for cycle in cycles(graph)]
    assert not found, "import cycles between packages (a package: a module name's first two levels):\n\n" + \
        "\n\n".join(found)


def test_no_import_cycle_between_workspace_packages():
    graph: dict[str, dict[str, Edge]] = {package: {} for package in PACKAGES}
    for module, targets in module_graph().items():
        for target, edge in targets.items():
            if top(target) != top(module):
                graph[top(module)].setdefault(top(target), edge)
    found = [describe(cycle, graph) for cycle in cycles(graph)]
    assert not found, "import cycles between the workspace packages:\n\n" + "\n\n".join(found)


# --- the stated direction -------------------------------------------------------------------------------------


def offending(package: str, allowed) -> list[str]:
    return sorted(f"{where(module, item.line)}: {item.name}" for module, found in imports().items()
                  if top(module) == package for item in found if not allowed(item.name))


def test_the_core_imports_no_other_strata_package():
    others = set(PACKAGES) - {"strata_core"}
    assert offending("strata_core", lambda name: top(name) not in others) == []


def test_the_core_imports_neither_the_web_stack_nor_the_database_nor_spark():
    assert offending("strata_core", lambda name: not within(name, NOT_IN_THE_CORE)) == []


def test_the_metastore_imports_the_core_only_and_sqlalchemy_asyncpg_alembic():
    def allowed(name: str) -> bool:
        return (top(name) in {"strata_core", "strata_metastore", *METASTORE_THIRD_PARTY}
                or top(name) in sys.stdlib_module_names)

    assert offending("strata_metastore", allowed) == []


def test_the_frame_imports_the_core_and_the_metastore_only():
    others = set(PACKAGES) - set(LIBRARIES)
    assert offending("strata_frame", lambda name: top(name) not in others) == []


def test_a_metastore_module_one_api_alone_uses_lives_in_that_api():
    """"A repository used by one API moves into that API": every module of the metastore imported by exactly one
    API, and by nothing else of the workspace (another metastore module, the frame, the CLI), belongs in that API.
    Models and migrations stay in the metastore whoever reads them (the schema is one)."""
    users: dict[str, set[str]] = {}
    for module, items in imports().items():
        for item in items:
            target = workspace_module(item.name)
            if target and top(target) == "strata_metastore" and target != module:
                users.setdefault(target, set()).add(top(module))
    found = sorted(f"{module}: used by {api} alone" for module, by in users.items()
                   if len(by) == 1 and (api := next(iter(by))) in APIS
                   and not module.endswith("models") and ".migrations" not in module)
    assert found == []


def test_strata_jobs_imports_only_the_core():
    others = set(PACKAGES) - {"strata_jobs", "strata_core"}
    assert offending("strata_jobs", lambda name: top(name) not in others) == []


def test_strata_jobs_imports_only_pyarrow_numpy_and_ulid_and_spark_only_in_its_drivers():
    found = []
    for module, items in imports().items():
        if top(module) != "strata_jobs":
            continue
        for item in items:
            name = top(item.name)
            if name in sys.stdlib_module_names or name in PACKAGES or name in JOBS_THIRD_PARTY:
                continue
            if name == "pyspark" and module in JOBS_SPARK_MODULES:
                continue
            found.append(f"{where(module, item.line)}: {item.name}")
    assert found == []


def test_nothing_strata_jobs_loads_imports_the_web_stack_or_the_database():
    """The core modules strata_jobs imports are free of FastAPI and SQLAlchemy through everything they import in
    turn, packages' `__init__` included (Python runs them on the way)."""
    graph = module_graph()
    reached = {module for module in sources() if top(module) == "strata_jobs"}
    queue = deque(reached)
    while queue:
        module = queue.popleft()
        parents = [".".join(module.split(".")[:n]) for n in range(1, module.count(".") + 1)]
        for target in [*graph[module], *(p for p in parents if p in sources())]:
            if target not in reached:
                reached.add(target)
                queue.append(target)
    found = sorted(f"{where(module, item.line)}: {item.name}" for module in reached for item in imports()[module]
                   if not item.type_checking and top(item.name) in WEB_AND_DATABASE)
    assert found == []


@pytest.mark.parametrize("api", APIS)
def test_an_api_imports_no_other_api_and_only_the_job_entry_points_it_submits(api):
    def allowed(name: str) -> bool:
        if top(name) == "strata_jobs":
            return workspace_module(name) in JOBS_ENTRY_POINTS_OF[api]
        return top(name) not in set(PACKAGES) - {*LIBRARIES, "strata_jobs", api}

    assert offending(api, allowed) == []


@pytest.mark.parametrize("package", sorted(set(PACKAGES) - {"strata_services"}))
def test_no_workspace_package_imports_strata_services(package):
    assert offending(package, lambda name: top(name) != "strata_services") == []


# --- the app's state stays at the edge ------------------------------------------------------------------------

# The modules that hand out the web frame's `AppState`: the class itself, and the dependencies that give it (and
# a session of its factory) to routes.
APP_STATE_MODULES = ("strata_frame.web.state", "strata_frame.web.deps")
# The edge of an API, where what the frame holds is wired into what each use case takes: the app factory, its
# routes, the FastAPI dependencies and the background work it starts.
EDGE_MODULE_NAMES = ("app", "router", "dependencies", "background")


def at_the_edge(module: str) -> bool:
    name = module.rpartition(".")[2]
    return within(module, ("strata_frame.web",)) or name in EDGE_MODULE_NAMES or name.endswith("_router")


def test_only_the_edge_of_an_api_reaches_the_app_state():
    """Use cases take what they use (sessions, storage, a clock, a settings group, metrics), never the app's state:
    a module that imports `strata_frame.web.state` or `strata_frame.web.deps` (which hands routes the state) is
    inside `strata_frame/web/`, or is named `app.py`, `router.py`, `*_router.py`, `dependencies.py` or
    `background.py` (docs/architecture.md, "Building an API"). Imports under `if TYPE_CHECKING:` count too."""
    found = sorted(f"{where(module, item.line)}: {item.name}" for module, items in imports().items()
                   if not at_the_edge(module) for item in items
                   if within(item.name, APP_STATE_MODULES) or item.name.rpartition(".")[2] == "AppState")
    assert found == []


def test_the_edge_rule_names_modules_as_the_doc_does():
    assert at_the_edge("strata_frame.web.openapi") and at_the_edge("strata_planner.compaction.router")
    assert at_the_edge("strata_indexer.app") and at_the_edge("strata_query.dependencies")
    assert at_the_edge("strata_frame.maintenance.passes_router")
    assert not at_the_edge("strata_planner.compaction.gc") and not at_the_edge("strata_frame.maintenance.skips")
    assert not at_the_edge("strata_indexer.ingest.service") and not at_the_edge("strata_frame.webhooks")
