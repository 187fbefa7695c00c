"""The ingester: the only process that writes the database (Takeout import today; Gmail scan next)."""
