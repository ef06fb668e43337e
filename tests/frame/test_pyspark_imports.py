"""pyspark imported by two threads at once (indexer-api's serving loop making the Spark session while its indexing
runner's thread imports the Spark error mapping): a plain import hands one thread a partially initialized pyspark
package, which ended the embedded indexing runner in a CI run; through `pyspark_module` both get the whole of it."""

from __future__ import annotations

import subprocess
import sys

from strata_frame.spark import pyspark_imports

# Two threads released together, each first to import its part of pyspark, in a fresh interpreter. `pyspark_module`
# is loaded from its file alone, so that both ways differ only in how the threads import: nothing else is loaded
# before them to shift their timing.
RACE = """
import importlib.util, sys, threading
spec = importlib.util.spec_from_file_location("pyspark_imports", sys.argv[2])
guard = importlib.util.module_from_spec(spec)
spec.loader.exec_module(guard)
plain = sys.argv[1] == "plain"
barrier = threading.Barrier(2)
errors = []

def importing(name):
    barrier.wait()
    try:
        if plain:
            importlib.import_module(name)
        else:
            guard.pyspark_module(name)
    except Exception as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=importing, args=(name,))
           for name in ("pyspark.errors", "pyspark.sql.connect.session")]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors)
"""


def _race(how: str) -> str:
    done = subprocess.run([sys.executable, "-c", RACE, how, pyspark_imports.__file__], capture_output=True,
                          text=True, timeout=120, check=True)
    return done.stdout.strip()


def test_two_threads_importing_pyspark_at_once_both_get_the_whole_package() -> None:
    plain = [_race("plain") for _ in range(3)]
    guarded = [_race("guarded") for _ in range(3)]
    assert guarded == ["[]"] * 3
    # The race is real on this pyspark: a plain import loses it (else this test would show nothing).
    assert any("partially initialized module" in outcome for outcome in plain), plain
