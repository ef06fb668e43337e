"""Pure query-planning logic: the predicate IR, time-range extraction and pruning (no database, Spark or HTTP)."""
