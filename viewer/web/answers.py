"""JSON answers that name the snapshot they were read from: `X-Gmail-Stats-Generation` is the file's epoch and
the generation the request's read transaction saw (absent before schema step 8, or without a database).

Every read route sets it, so a client (and the concurrency test) can tell which single commit an answer shows.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from fastapi.responses import Response
from pydantic import BaseModel
from sqlalchemy import Connection
from starlette.concurrency import run_in_threadpool

from viewer.query.database import Database, Snapshot
from viewer.query.queries import DbState, Generation, Totals

GENERATION_HEADER = "X-Gmail-Stats-Generation"

Read = tuple[bytes, Generation | None]  # a serialised answer and the generation it was read at
Build = Callable[[Connection, Snapshot, Totals], BaseModel]


def generation_headers(generation: Generation | None) -> dict[str, str]:
    return {GENERATION_HEADER: f"{generation[0]}-{generation[1]}"} if generation is not None else {}


def _json(model: BaseModel) -> bytes:
    return model.model_dump_json().encode()


def _read(database: Database, key: Hashable, build: Build, empty: Callable[[], BaseModel]) -> Read:
    with database.read_snapshot() as read:
        if read is None:
            return _json(empty()), None
        conn, snap = read
        totals = snap.totals
        if snap.state is not DbState.READY or totals is None:
            return _json(empty()), snap.generation
        return database.cache.get(snap.generation, key, lambda: _json(build(conn, snap, totals))), snap.generation


async def cached_answer(database: Database, key: Hashable, build: Build, empty: Callable[[], BaseModel]) -> Response:
    """`build`'s answer for a database with senders, else `empty`'s; computed in the threadpool (it opens a
    connection and may wait on SQLite), and kept serialised under `key` for the generation it read, so a hit
    costs no encoding at all."""
    body, generation = await run_in_threadpool(_read, database, key, build, empty)
    return Response(body, media_type="application/json", headers=generation_headers(generation))
