"""Reading the database: the read-only engines, the SQL behind every route (returning dataclasses), the sender
filters, hidden senders and the one cache keyed on the generation. No FastAPI and no launcher here."""
