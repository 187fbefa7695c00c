"""The HTTP layer: FastAPI routes, their schemas and dependencies, error handlers, the security guard and the server.
The only room that imports FastAPI (`viewer.app` assembles it); it calls the query and launch rooms, never the
other way round."""
