"""Pure domain logic: no FastAPI, SQLAlchemy or PySpark imports here (spark-jobs depends on it)."""
