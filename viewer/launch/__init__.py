"""Launching ingesters: the launcher protocol, its process and Docker implementations, the runner containers' spec,
the import folder checks and the run control that ties a launch to its run row. No FastAPI here."""
