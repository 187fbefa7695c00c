"""The web viewer: reads the database, never writes it; launches ingesters."""
