"""Spark Connect access shared by every service: one lazily created client session per remote."""

from strata_frame.spark.session import SparkSessionFactory

__all__ = ["SparkSessionFactory"]
