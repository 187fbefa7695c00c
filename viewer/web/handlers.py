"""The error handlers: every answer, 404, 405, 422 and an unhandled 500 included, has the `ApiError` body shape."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from shared.errors import ErrorKind
from shared.resume import CommandStyle, runs_command
from viewer.errors import INTERNAL_MESSAGE, RUNS_COMMAND, ApiError, error_body

log = logging.getLogger("viewer")

_STATUS_KINDS = {
    404: (ErrorKind.NOT_FOUND, "no such page or API route"),
    405: (ErrorKind.METHOD_NOT_ALLOWED, "this route does not accept that method"),
}


def install_error_handlers(app: FastAPI, *, style: CommandStyle, db: str | None = None) -> None:
    """Every error answer has the one shape; commands in messages are the person's own (`make …` under Docker,
    else naming the viewer's database `db`)."""
    runs = runs_command(style, db)

    @app.exception_handler(ApiError)
    async def on_api_error(_request: Request, exc: ApiError) -> JSONResponse:
        message = exc.message.replace(RUNS_COMMAND, runs)
        return JSONResponse(error_body(exc.kind, message, **exc.extra), status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind, message = _STATUS_KINDS.get(exc.status_code, (ErrorKind.HTTP_ERROR, str(exc.detail)))
        return JSONResponse(error_body(kind, message), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        if tuple(first.get("loc", ())) == ("body", "source"):
            # The same kind the page has always seen for an unknown source, now that the schema lists them.
            return JSONResponse(
                error_body(ErrorKind.BAD_SOURCE, "source must be `mbox` or `gmail_api`"), status_code=422
            )
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        message = f"{where}: {first.get('msg', 'invalid value')}" if where else str(first.get("msg", "invalid request"))
        return JSONResponse(error_body(ErrorKind.BAD_REQUEST, message), status_code=422)

    @app.exception_handler(Exception)
    async def on_crash(_request: Request, exc: Exception) -> JSONResponse:
        # Starlette's ServerErrorMiddleware calls this for anything unhandled, then re-raises for the server log.
        log.error("unhandled error: %r", exc)
        return JSONResponse(error_body(ErrorKind.INTERNAL, INTERNAL_MESSAGE), status_code=500)
