"""Run records (`ingest_runs`): the ingester writes them, the viewer and `gmail-stats runs` read them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from sqlalchemy import Connection, insert, select, update

from shared.errors import ErrorKind
from shared.schema.models import OPEN_STATES, RunOutcome, RunState, Source, ingest_runs

WARNINGS_TAIL_MAX = 50
# Never shown outside the ingester: a page token is a credential-like cursor, the fingerprint is internal.
PRIVATE_COLUMNS = frozenset({"resume_token", "mbox_fingerprint", "launch_token"})
_T = ingest_runs


@dataclass(frozen=True, slots=True)
class Run:
    run_id: int
    source: str
    state: str
    pid: int | None
    started_at_unix: int
    updated_at_unix: int
    finished_at_unix: int | None
    messages_seen: int
    messages_new: int
    messages_skipped: int
    messages_excluded: int
    total_estimate: int | None
    bytes_total: int | None
    bytes_done: int
    resume_token: str | None
    mbox_path: str | None
    mbox_fingerprint: str | None
    error_kind: str | None
    error: str | None
    auth_url: str | None
    warnings_count: int
    warnings_tail: tuple[str, ...]
    outcome: str | None
    launch_token: str | None

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    def public_dict(self) -> dict[str, Any]:
        """Every column but the private ones, `warnings_tail` as a list: the JSON shape of a run everywhere."""
        data = {k: v for k, v in asdict(self).items() if k not in PRIVATE_COLUMNS}
        data["warnings_tail"] = list(self.warnings_tail)
        return data


RUN_COLUMNS = tuple(f.name for f in fields(Run))
PUBLIC_RUN_COLUMNS = tuple(c for c in RUN_COLUMNS if c not in PRIVATE_COLUMNS)


def _run_from_row(row: Mapping[Any, Any]) -> Run:
    values = dict(row)
    values["warnings_tail"] = tuple(json.loads(values["warnings_tail"] or "[]"))
    return Run(**values)


def create_run(
    conn: Connection,
    *,
    source: Source,
    pid: int,
    now: float,
    mbox_path: str | None = None,
    bytes_total: int | None = None,
    mbox_fingerprint: str | None = None,
    launch_token: str | None = None,
) -> int:
    result = conn.execute(
        insert(_T).values(
            source=str(source),
            state=str(RunState.RUNNING),
            pid=pid,
            started_at_unix=int(now),
            updated_at_unix=int(now),
            mbox_path=mbox_path,
            bytes_total=bytes_total,
            mbox_fingerprint=mbox_fingerprint,
            launch_token=launch_token,
        )
    )
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def get_run(conn: Connection, run_id: int) -> Run | None:
    row = conn.execute(select(_T).where(_T.c.run_id == run_id)).mappings().first()
    return _run_from_row(row) if row is not None else None


def list_runs(conn: Connection, *, limit: int) -> list[Run]:
    rows = conn.execute(select(_T).order_by(_T.c.run_id.desc()).limit(limit)).mappings()
    return [_run_from_row(row) for row in rows]


def open_run(conn: Connection) -> Run | None:
    """The newest run still `running`/`awaiting_auth` (only trustworthy alongside a held ingest lock)."""
    row = (
        conn.execute(select(_T).where(_T.c.state.in_([str(s) for s in OPEN_STATES])).order_by(_T.c.run_id.desc()))
        .mappings()
        .first()
    )
    return _run_from_row(row) if row is not None else None


def abandon_open_runs(conn: Connection, *, now: float) -> int:
    """Marks runs left open by a dead ingester `abandoned`; call only while holding the ingest lock."""
    result = conn.execute(
        update(_T)
        .where(_T.c.state.in_([str(s) for s in OPEN_STATES]))
        .values(
            state=str(RunState.ABANDONED),
            outcome=str(RunOutcome.PARTIAL),
            finished_at_unix=int(now),
            updated_at_unix=int(now),
            error_kind=ErrorKind.ABANDONED,
            error="the ingester stopped without recording an end (killed or crashed); resume it to finish",
        )
    )
    return int(result.rowcount)


def reopen_run(conn: Connection, run_id: int, *, pid: int, now: float, launch_token: str | None = None) -> None:
    """Puts a resumed run back to `running` under a new process; its counters carry on."""
    conn.execute(
        update(_T)
        .where(_T.c.run_id == run_id)
        .values(
            state=str(RunState.RUNNING),
            pid=pid,
            updated_at_unix=int(now),
            finished_at_unix=None,
            outcome=None,
            error_kind=None,
            error=None,
            auth_url=None,
            launch_token=launch_token,
        )
    )


def run_by_launch_token(conn: Connection, launch_token: str) -> Run | None:
    row = conn.execute(select(_T).where(_T.c.launch_token == launch_token)).mappings().first()
    return _run_from_row(row) if row is not None else None


_UPDATABLE = frozenset(RUN_COLUMNS) - {
    "run_id",
    "source",
    "started_at_unix",
    "warnings_tail",
    "warnings_count",
}


def update_run(conn: Connection, run_id: int, *, now: float, **values: Any) -> None:
    """Sets the given columns and the heartbeat `updated_at_unix`."""
    unknown = set(values) - _UPDATABLE
    if unknown:
        raise ValueError(f"not updatable run columns: {sorted(unknown)}")
    conn.execute(update(_T).where(_T.c.run_id == run_id).values(updated_at_unix=int(now), **values))


def add_warnings(conn: Connection, run_id: int, warnings: Iterable[str]) -> None:
    """Counts warnings and keeps the last `WARNINGS_TAIL_MAX` of them on the run."""
    new = list(warnings)
    if not new:
        return
    current = conn.execute(select(_T.c.warnings_tail).where(_T.c.run_id == run_id)).scalar_one()
    tail = (json.loads(current or "[]") + new)[-WARNINGS_TAIL_MAX:]
    conn.execute(
        update(_T)
        .where(_T.c.run_id == run_id)
        .values(warnings_tail=json.dumps(tail), warnings_count=_T.c.warnings_count + len(new))
    )


def finish_run(
    conn: Connection,
    run_id: int,
    *,
    state: RunState,
    outcome: RunOutcome,
    now: float,
    error_kind: str | None = None,
    error: str | None = None,
) -> None:
    conn.execute(
        update(_T)
        .where(_T.c.run_id == run_id)
        .values(
            state=str(state),
            outcome=str(outcome),
            finished_at_unix=int(now),
            updated_at_unix=int(now),
            error_kind=error_kind,
            error=error,
            auth_url=None,
        )
    )
