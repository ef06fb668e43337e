"""strata_jobs: the code that runs inside Spark (sorted merge, artifact builds, pruned scans).

On an executor this package usually arrives as a Spark Connect session artifact (`strata_frame.spark.bundle`),
with a generated `_bundle` module naming the archive of third-party dependencies Spark unpacked beside it. That
archive goes on the path here, before any job module imports from it, and an executor that cannot run the
bundle's native code fails with one line that says why instead of an ImportError deep in a job.
"""

from __future__ import annotations


def _use_shipped_dependencies() -> None:
    import os
    import sys

    try:
        from strata_jobs import _bundle
    except ImportError:
        return  # installed normally: the environment has the dependencies
    if sys.implementation.cache_tag != _bundle.PYTHON_TAG:
        raise ImportError(f"strata job bundle {_bundle.DIGEST} needs {_bundle.PYTHON_TAG} on executors; this "
                          f"executor runs {sys.implementation.cache_tag} ({sys.executable})")
    import sysconfig

    if sysconfig.get_platform() != _bundle.PLATFORM_TAG:
        raise ImportError(f"strata job bundle {_bundle.DIGEST} has native code for {_bundle.PLATFORM_TAG}; this "
                          f"executor is {sysconfig.get_platform()}")
    import pyarrow

    if int(pyarrow.__version__.split(".")[0]) < _bundle.MIN_PYARROW_MAJOR:
        raise ImportError(f"strata jobs need pyarrow>={_bundle.MIN_PYARROW_MAJOR} on executors; this executor "
                          f"has pyarrow {pyarrow.__version__}")
    # .../<session dir>/strata-jobs-<digest>.zip/strata_jobs/__init__.py: the archive is unpacked in <session dir>.
    session_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    dependencies = os.path.join(session_dir, _bundle.DEPENDENCIES_DIR)
    if not os.path.isdir(dependencies):
        raise ImportError(f"strata job dependencies {_bundle.DEPENDENCIES_DIR} were not unpacked in {session_dir}")
    if dependencies not in sys.path:
        # Ahead of site-packages, as Spark places the session's own files: the shipped versions are the tested ones.
        sys.path.insert(1, dependencies)


_use_shipped_dependencies()
