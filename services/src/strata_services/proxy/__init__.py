"""The query proxy: the clients' entry point in front of the query-api instances."""
