"""The metastore: SQLAlchemy models, repositories and the one Alembic history (PostgreSQL only)."""
