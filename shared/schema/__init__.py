"""The database's shape: the SQLAlchemy models and the ordered migrations (frozen DDL per step), including the
upgrade of the original Rust gmail-stats."""
