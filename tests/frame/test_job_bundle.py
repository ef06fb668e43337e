"""The job bundle ships exactly what Spark jobs import beyond what executors are assumed to have, is built once
per code version, and carries the generated module that tells an executor where its dependencies are."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from strata_frame.spark.bundle import (
    EXECUTOR_PROVIDES,
    JOB_DEPENDENCIES,
    JOB_PACKAGES,
    build_job_bundle,
    ship_job_bundle,
)

# Every module a Spark task may unpickle a function from.
JOB_ENTRY_POINTS = ("strata_jobs.spark_merge", "strata_jobs.spark_index", "strata_jobs.pruned_scan",
                    "strata_jobs.spark_tasks")

_IMPORTED = """
import json, sys
before = set(sys.modules)
for name in sys.argv[1:]:
    __import__(name)
print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names))))
"""


def _normal(name: str) -> str:
    return name.lower().replace("_", "-")


def test_bundle_dependencies_cover_every_import_of_the_job_entry_points():
    # A fresh interpreter: what this test process already imported must not hide an import.
    out = subprocess.run([sys.executable, "-c", _IMPORTED, *JOB_ENTRY_POINTS], check=True, capture_output=True,
                         text=True).stdout
    top_level = [m for m in json.loads(out) if not m.startswith("_")]  # _cython_*, _sysconfigdata: internals
    owners = importlib.metadata.packages_distributions()
    shipped = {_normal(d) for d in JOB_DEPENDENCIES} | {_normal(d) for d in EXECUTOR_PROVIDES}
    missing = {}
    for module in top_level:
        if module in JOB_PACKAGES or module == "cython_runtime":
            continue
        distributions = {_normal(d) for d in owners.get(module, [module])}
        if not distributions & shipped:
            missing[module] = sorted(distributions)
    assert not missing, f"imported by jobs but neither shipped nor provided by executors: {missing}"


def test_bundle_is_built_once_per_code_version(tmp_path: Path):
    first = build_job_bundle(tmp_path)
    stamps = (first.code_zip.stat().st_mtime_ns, first.deps_zip.stat().st_mtime_ns)
    second = build_job_bundle(tmp_path)
    assert second == first
    assert (second.code_zip.stat().st_mtime_ns, second.deps_zip.stat().st_mtime_ns) == stamps
    assert first.code_zip.name == f"strata-jobs-{first.digest}.zip"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == sorted(
        [first.code_zip.name, first.deps_zip.name])


def test_bundle_holds_the_code_the_generated_module_and_the_native_dependencies(tmp_path: Path):
    bundle = build_job_bundle(tmp_path)
    with zipfile.ZipFile(bundle.code_zip) as code:
        names = set(code.namelist())
        generated = code.read("strata_jobs/_bundle.py").decode()
    assert {"strata_jobs/__init__.py", "strata_jobs/merge.py", "strata_core/artifacts/build.py"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert f"DEPENDENCIES_DIR = 'strata-deps-{bundle.digest}'" in generated
    with zipfile.ZipFile(bundle.deps_zip) as deps:
        names = deps.namelist()
    for package in ("pyroaring", "tantivy/", "zstandard/", "xxhash/", "pydantic_core/", "ulid/"):
        assert any(n.startswith(package) for n in names), package
    # Extension modules are there as files to dlopen, and metadata some packages read at import.
    assert any(n.endswith(".so") and n.startswith("tantivy/") for n in names)
    assert any(n.startswith("python_ulid-") and n.endswith("METADATA") for n in names)
    assert not [n for n in names if n.startswith(("pyarrow/", "numpy/", "pandas/", "pyspark/"))]


def test_the_shipped_code_finds_its_dependencies_in_a_bare_interpreter(tmp_path: Path):
    """What an executor does, without Spark: the code zip on the path, the archive unpacked beside it, and an
    interpreter that sees no site-packages but the standard library's and pyarrow's/numpy's."""
    bundle = build_job_bundle(tmp_path / "cache")
    session = tmp_path / "session"
    session.mkdir()
    code = session / bundle.code_zip.name
    code.write_bytes(bundle.code_zip.read_bytes())
    with zipfile.ZipFile(bundle.deps_zip) as deps:
        deps.extractall(session / bundle.deps_alias)
    # Only the executor-provided packages of this venv are visible: a directory of links to them.
    provided = tmp_path / "provided"
    provided.mkdir()
    site = Path(importlib.metadata.distribution("pyarrow").locate_file(""))
    for name in ("pyarrow", "numpy", "numpy.libs", "pyarrow.libs"):
        if (site / name).exists():
            (provided / name).symlink_to(site / name)
    script = ("import sys; sys.path[:] = [p for p in sys.path if 'site-packages' not in p]; "
              f"sys.path[1:1] = [{str(code)!r}, {str(provided)!r}]; "
              "import strata_jobs.spark_index, pyroaring, tantivy; print(pyroaring.__file__)")
    out = subprocess.run([sys.executable, "-S", "-c", script], check=True, capture_output=True, text=True).stdout
    assert out.strip().startswith(str(session / bundle.deps_alias))


class _RecordingSession:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def addArtifacts(self, *paths: str, **kind: bool) -> None:  # noqa: N802 - pyspark's name
        self.calls.extend((p, kind) for p in paths)


def test_ship_adds_the_archive_under_its_alias_and_the_code_as_a_pyfile(tmp_path: Path):
    bundle = build_job_bundle(tmp_path)
    session = _RecordingSession()
    ship_job_bundle(session, bundle)
    assert session.calls == [(f"{bundle.deps_zip}#{bundle.deps_alias}", {"archive": True}),
                             (str(bundle.code_zip), {"pyfile": True})]
    assert str(bundle.code_zip) not in sys.path
