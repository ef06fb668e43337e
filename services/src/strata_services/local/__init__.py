"""Embedded local infrastructure for the laptop stack: Java discovery and the Spark Connect server."""

# What `strata up` writes of its processes and what every other command reads to find them, under STRATA_HOME.
# Here, not in `stack.py`, so a command that only reads it imports none of what starts the stack.
STATE_FILE = "stack.json"
