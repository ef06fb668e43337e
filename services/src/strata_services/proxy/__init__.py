"""The query proxy: the clients' entry point in front of every replica of the three APIs."""
