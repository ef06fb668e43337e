"""Embedded local infrastructure for the laptop stack: Java discovery and the Spark Connect server."""
