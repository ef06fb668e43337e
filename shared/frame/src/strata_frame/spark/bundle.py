"""The job bundle: everything Strata's Spark jobs import, packed to travel with each Spark Connect session.

An executor is assumed to have Spark and a stock CPython of the driver's minor version (same OS and machine
architecture) with pyarrow (at least the driver's major version), numpy and pandas: what PySpark's Arrow features
need, nothing of Strata's. The rest ships as two session artifacts (Spark Connect's `addArtifacts`):

- `strata-jobs-<digest>.zip` (`pyfile=True`): the pure-Python packages `strata_jobs` and `strata_core`, plus a
  generated `strata_jobs/_bundle.py` naming the archive below. Spark puts the zip on the Python workers' path.
- `strata-deps-<digest>.zip` (`archive=True`): the third-party distributions the jobs import (pydantic, python-ulid,
  and the native pyroaring, tantivy, zstandard and xxhash, whose extension modules cannot be imported from a zip),
  copied from this environment. Spark unpacks it beside the code zip on every executor; `strata_jobs/__init__`
  puts it on the path before any job module imports from it.

The digest covers the packages' files, the dependencies' RECORDs (which hash every installed file), the Python
version and the platform: a bundle is built once per code version and kept on disk; a session ships it once
(the factory ships again with each new session, so a restarted server, which forgets every session's artifacts,
gets it again).

This module locates `strata_jobs` by name and never imports it (the jobs depend on `strata_core`, not the
reverse; nor does the core depend on this frame).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import sys
import sysconfig
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow

log = logging.getLogger("strata.spark")

# The packages of Strata's own code that jobs import; both are pure Python. strata_jobs depends on the core alone
# (tests/test_dependency_direction.py), so neither the metastore nor the service frame ships.
JOB_PACKAGES = ("strata_jobs", "strata_core")
# What the job modules import beyond the standard library and what executors are assumed to have. A test
# imports every job entry point in a fresh interpreter and checks this list covers what it loads.
JOB_DEPENDENCIES = (
    "annotated-types",
    "pydantic",
    "pydantic-core",
    "pyroaring",
    "python-ulid",
    "tantivy",
    "typing-extensions",
    "typing-inspection",
    "xxhash",
    "zstandard",
)
# What an executor must bring itself (PySpark's Arrow features need them; the bundle never ships them).
EXECUTOR_PROVIDES = ("numpy", "pandas", "pyarrow", "pyspark")
# Format of the generated module; part of the digest, so a change of it makes a new bundle.
_BUNDLE_FORMAT = 1


@dataclass(frozen=True, slots=True)
class JobBundle:
    """The two artifacts of one code version, as files on disk."""

    digest: str
    code_zip: Path
    deps_zip: Path

    @property
    def deps_alias(self) -> str:
        """The directory the dependencies are unpacked into, beside the code zip, on every executor."""
        return f"strata-deps-{self.digest}"

    @property
    def size_bytes(self) -> int:
        return self.code_zip.stat().st_size + self.deps_zip.stat().st_size


def python_tag() -> str:
    """The interpreter an extension module built here needs, e.g. `cpython-311`."""
    return sys.implementation.cache_tag


def platform_tag() -> str:
    """The OS and architecture native code built here runs on, e.g. `linux-x86_64`."""
    return sysconfig.get_platform()


def _package_files(package: str) -> list[tuple[str, Path]]:
    """(path inside the zip, file) for every source file of an importable package, sorted."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"job package {package} is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    files = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files.append((f"{package}/{path.relative_to(root).as_posix()}", path))
    return files


def _distribution_files(name: str) -> tuple[importlib.metadata.Distribution, list[tuple[str, Path]]]:
    """A dependency's installed files: its packages and metadata (some read their own version at import), no
    caches and no scripts outside site-packages."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(f"job dependency {name} is not installed in this environment") from None
    files = []
    for entry in dist.files or ():
        relative = entry.as_posix()
        if relative.startswith("../") or "__pycache__" in relative:
            continue
        if relative.endswith(".pyc"):
            continue
        files.append((relative, Path(str(entry.locate()))))
    if not files:
        raise RuntimeError(f"job dependency {name} has no importable files")
    return dist, sorted(files)


def _digest(code: list[tuple[str, Path]], deps: list[tuple[importlib.metadata.Distribution, list]]) -> str:
    sha = hashlib.sha256()
    sha.update(f"format={_BUNDLE_FORMAT} python={python_tag()} platform={platform_tag()}\n".encode())
    for name, path in code:
        sha.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    for dist, _ in deps:
        # RECORD lists every installed file with its sha256: a changed install changes the digest.
        record = dist.read_text("RECORD") or ""
        sha.update(f"{dist.metadata['Name']}=={dist.version}\n".encode() + record.encode())
    return sha.hexdigest()[:16]


def _bundle_module(bundle: JobBundle) -> str:
    driver_pyarrow = pyarrow.__version__.split(".")[0]
    return (
        '"""Generated by strata_frame.spark.bundle: present only in a shipped job bundle."""\n'
        f"DIGEST = {bundle.digest!r}\n"
        f"DEPENDENCIES_DIR = {bundle.deps_alias!r}\n"
        f"PYTHON_TAG = {python_tag()!r}\n"
        f"PLATFORM_TAG = {platform_tag()!r}\n"
        f"MIN_PYARROW_MAJOR = {int(driver_pyarrow)}\n"
    )


def _write_zip(target: Path, members: list[tuple[str, Path]], extra: dict[str, str] | None = None) -> None:
    # Written under a temporary name and renamed: a reader never sees half a zip.
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", delete=False) as tmp:
        try:
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
                for name, path in members:
                    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    # Keep the mode bits: extension modules are loaded with dlopen from the unpacked copy.
                    info.external_attr = (path.stat().st_mode & 0o777 | 0o100000) << 16
                    with path.open("rb") as source, archive.open(info, "w") as sink:
                        while chunk := source.read(1 << 20):
                            sink.write(chunk)
                for name, text in (extra or {}).items():
                    archive.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), text)
        except BaseException:
            os.unlink(tmp.name)
            raise
    os.replace(tmp.name, target)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Serialise builders of one cache directory: the three APIs start together and would build it thrice."""
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_job_bundle(cache_dir: Path) -> JobBundle:
    """The bundle of the code installed in this environment, built into `cache_dir` unless already there."""
    code = [member for package in JOB_PACKAGES for member in _package_files(package)]
    deps = [_distribution_files(name) for name in JOB_DEPENDENCIES]
    digest = _digest(code, deps)
    cache_dir.mkdir(parents=True, exist_ok=True)
    bundle = JobBundle(digest, cache_dir / f"strata-jobs-{digest}.zip", cache_dir / f"strata-deps-{digest}.zip")
    with _locked(cache_dir):
        if bundle.code_zip.exists() and bundle.deps_zip.exists():
            return bundle
        started = time.perf_counter()
        _write_zip(bundle.deps_zip, [member for _, files in deps for member in files])
        _write_zip(bundle.code_zip, code, {"strata_jobs/_bundle.py": _bundle_module(bundle)})
        log.info("built job bundle %s (%.1f MB) in %.1f s", digest, bundle.size_bytes / 1e6,
                 time.perf_counter() - started)
    return bundle


def ship_job_bundle(session, bundle: JobBundle) -> None:
    """Add the bundle to a Spark Connect session: every later job of the session can import Strata's code."""
    session.addArtifacts(f"{bundle.deps_zip}#{bundle.deps_alias}", archive=True)
    session.addArtifacts(str(bundle.code_zip), pyfile=True)
    # The client also puts a pyfile on its own sys.path; this process imports its installed code, not the zip.
    with contextlib.suppress(ValueError):
        sys.path.remove(str(bundle.code_zip))

