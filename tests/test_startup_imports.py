"""What a service process imports before it serves: pyspark's Connect client (with pandas, which it needs) costs
about 2 s of CPU, paid by every replica at every (rolling) restart and by every child process the suite starts. No
API imports it until a Spark job or a Spark query runs."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pyspark.sql.connect", "pandas")
APPS = ("strata_indexer.app", "strata_planner.app", "strata_query.app", "strata_services.proxy.app",
        "strata_services.cli")


def test_no_service_imports_the_spark_client_or_pandas_before_it_needs_them() -> None:
    probe = (f"import importlib, sys\n"
             f"for app in {APPS!r}:\n"
             f"    importlib.import_module(app)\n"
             f"print(sorted({{m.split('.')[0] if m.startswith('pandas') else m for m in sys.modules\n"
             f"              if m.startswith({HEAVY!r})}}))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout
