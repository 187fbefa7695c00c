"""JSON answers that name the snapshot they were read from: `X-Gmail-Stats-Generation` is the file's epoch and
the generation the request's read transaction saw (absent before schema step 8, or without a database).

Every read route sets it, so a client (and the concurrency test) can tell which single commit an answer shows.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from viewer.query.queries import Generation

GENERATION_HEADER = "X-Gmail-Stats-Generation"

Read = tuple[bytes, Generation | None]  # a serialised answer and the generation it was read at


def generation_headers(generation: Generation | None) -> dict[str, str]:
    return {GENERATION_HEADER: f"{generation[0]}-{generation[1]}"} if generation is not None else {}


def label(response: Response, generation: Generation | None) -> None:
    response.headers.update(generation_headers(generation))


async def threaded(compute: Callable[[], Read]) -> Response:
    """A JSON answer computed in the threadpool (it opens a connection and may wait on SQLite)."""
    body, generation = await run_in_threadpool(compute)
    return Response(body, media_type="application/json", headers=generation_headers(generation))
