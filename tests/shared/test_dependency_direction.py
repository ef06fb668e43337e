"""Imports point one way (docs/architecture.md, "Dependency direction"): read from every module's own import
statements (function-level imports included), so a new edge against the direction fails here before a reader
of the doc meets it."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "strata_shared": ROOT / "shared" / "src" / "strata_shared",
    "strata_indexer": ROOT / "indexer-api" / "src" / "strata_indexer",
    "strata_planner": ROOT / "planner-api" / "src" / "strata_planner",
    "strata_query": ROOT / "query-api" / "src" / "strata_query",
    "strata_jobs": ROOT / "spark-jobs" / "src" / "strata_jobs",
    "strata_services": ROOT / "services" / "src" / "strata_services",
}
APIS = ("strata_indexer", "strata_planner", "strata_query")
# The parts of strata_shared free of FastAPI and SQLAlchemy that the Spark Python workers run.
JOBS_MAY_IMPORT_FROM_SHARED = ("strata_shared.domain", "strata_shared.artifacts", "strata_shared.splitfile",
                               "strata_shared.arrow_numpy", "strata_shared.object_requests",
                               # A delete's predicate, its JSON form and its evaluation over Arrow: the rows a
                               # rewrite leaves out and a scan hides are decided by this one pure code.
                               "strata_shared.query.predicate", "strata_shared.query.predicate_json",
                               "strata_shared.query.row_filter", "strata_shared.query.text_tokens")
# Each API imports the strata_jobs entry points of the work it submits, and no other.
JOBS_ENTRY_POINTS_OF = {
    "strata_planner": {"strata_jobs.merge", "strata_jobs.spark_merge"},
    "strata_indexer": {"strata_jobs.index_build", "strata_jobs.spark_index"},
    "strata_query": {"strata_jobs.pruned_scan"},
}


@cache
def imports_of(package: str) -> dict[str, set[str]]:
    """Absolute module names each source file of `package` imports, by file (relative to the repository)."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGES[package].rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def offending(package: str, allowed) -> list[str]:
    return sorted(f"{file}: {name}" for file, names in imports_of(package).items() for name in names
                  if not allowed(name))


def top(name: str) -> str:
    return name.split(".")[0]


def within(name: str, prefixes) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def test_every_package_is_scanned():
    for package, directory in PACKAGES.items():
        assert imports_of(package), f"no source found for {package} under {directory}"


def test_strata_shared_imports_no_other_strata_package():
    others = set(PACKAGES) - {"strata_shared"}
    assert offending("strata_shared", lambda name: top(name) not in others) == []


def test_strata_jobs_imports_only_the_database_free_parts_of_strata_shared():
    def allowed(name: str) -> bool:
        if top(name) in ("fastapi", "sqlalchemy", "asyncpg"):
            return False
        if top(name) == "strata_shared":
            return within(name, JOBS_MAY_IMPORT_FROM_SHARED)
        return top(name) not in set(PACKAGES) - {"strata_shared", "strata_jobs"}

    assert offending("strata_jobs", allowed) == []


@pytest.mark.parametrize("api", APIS)
def test_an_api_imports_no_other_api_and_only_the_job_entry_points_it_submits(api):
    def allowed(name: str) -> bool:
        if top(name) == "strata_jobs":
            return name in JOBS_ENTRY_POINTS_OF[api]
        return top(name) not in set(PACKAGES) - {"strata_shared", "strata_jobs", api}

    assert offending(api, allowed) == []


@pytest.mark.parametrize("package", sorted(set(PACKAGES) - {"strata_services"}))
def test_no_workspace_package_imports_strata_services(package):
    assert offending(package, lambda name: top(name) != "strata_services") == []
