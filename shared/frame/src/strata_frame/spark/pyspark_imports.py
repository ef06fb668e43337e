"""pyspark's modules, imported by one thread at a time.

pyspark's package imports itself in a cycle (`pyspark` imports `pyspark.sql`, which imports `pyspark`). When two
threads of one process are the first to import it at once, Python hands one of them the partially initialized
package: `ImportError: cannot import name 'SQLContext' from partially initialized module 'pyspark.sql'`. indexer-api
met exactly that at start, its serving loop making the Spark session for a readiness check while the embedded
indexing runner's thread imported the job queue's Spark error mapping, and the runner ended. Every import of
pyspark in the services' own code goes through `pyspark_module`, so the first one completes before another begins;
after that it is a dictionary lookup under an uncontended lock.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

# Reentrant: importing one pyspark module may run code that asks for another.
_importing = threading.RLock()


def pyspark_module(name: str) -> ModuleType:
    with _importing:
        return importlib.import_module(name)
