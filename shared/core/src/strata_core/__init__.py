"""Strata's pure core: the domain, the predicate IR, the SQL front, artifacts, split files, settings, object storage.
No database, no web."""
