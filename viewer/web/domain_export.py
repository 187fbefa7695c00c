"""`/api/domains.csv`: the Domains view as CSV, every domain the page lists (its search, hidden senders left out,
its sort), written completely before the answer starts, in the sender export's format (`viewer.web.export`)."""

from __future__ import annotations

import csv
import io
import logging
import tempfile

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from shared.errors import ErrorKind
from shared.text.csv_cells import iso_date, neutralise_row
from viewer.errors import ApiError
from viewer.query import hidden_queries, rollup_queries
from viewer.query.queries import DbState
from viewer.query.rollup_queries import DomainRow, DomainSort
from viewer.query.sender_queries import SortOrder
from viewer.web.answers import generation_headers
from viewer.web.api import _hidden
from viewer.web.deps import StateDep
from viewer.web.export import MEMORY_BYTES, CsvBody
from viewer.web.filter_params import FilterDep
from viewer.web.schemas import ERROR_RESPONSES

log = logging.getLogger("viewer")
router = APIRouter(prefix="/api", responses=ERROR_RESPONSES)

DOMAIN_CSV_COLUMNS = (
    "domain",
    "senders",
    "mails_sent",
    "unread",
    "unread_ratio",
    "bytes",
    "first_seen",
    "last_seen",
    "list_unsubscribe",
    "gmail_url",
)
_EVERY = 2**31  # "every domain" as a page size: more than a mailbox holds


def domain_csv_row(row: DomainRow) -> list[object]:
    """One domain's cells, text that would start a formula neutralised (`shared.text.csv_cells`)."""
    return neutralise_row(
        (
            row.domain,
            row.senders,
            row.mails_sent,
            row.unread,
            row.unread_ratio,
            row.bytes,
            iso_date(row.first_seen_unix),
            iso_date(row.last_seen_unix),
            row.list_unsubscribe,
            row.gmail_url,
        )
    )


@router.get(
    "/domains.csv",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "matching domains"}},
)
def export_domains_csv(
    state: StateDep, f: FilterDep, sort: DomainSort = DomainSort.MAILS_SENT, order: SortOrder = SortOrder.DESC
) -> StreamingResponse:
    """The domains `/api/domains` lists for `q` and hidden senders, in its sort, every page at once; dates in ISO
    8601 (UTC). The other sender filters do not apply to a whole domain, as on `/api/domains`."""
    database = state.database
    spool = tempfile.SpooledTemporaryFile(max_size=MEMORY_BYTES)  # noqa: SIM115 - closed by `CsvBody.chunks`
    try:
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="", write_through=True)
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(DOMAIN_CSV_COLUMNS)
        generation = None
        if database.exists():
            with database.connect() as conn:
                # One read transaction, so one snapshot of the table even while an ingester commits (WAL).
                snap = database.require_ready(conn)
                generation = snap.generation
                if snap.state is DbState.READY:
                    hidden = _hidden(database.cache, snap, conn, f.exclude)
                    page = rollup_queries.domains_page(
                        conn,
                        q=f.q,
                        sort=sort,
                        order=order,
                        offset=0,
                        limit=_EVERY,
                        totals=snap.totals,
                        hidden=hidden.by_domain,
                        seen=hidden_queries.seen_lookup(conn, hidden),
                    )
                    writer.writerows(domain_csv_row(d) for d in page.domains)
        text.flush()
        size = spool.tell()
        text.detach()
    except OSError as exc:
        spool.close()
        log.error("domains.csv could not be built: %r", exc)
        raise ApiError(
            503, ErrorKind.EXPORT_FAILED, "the export could not be prepared (no room for it); try again"
        ) from exc
    except BaseException:
        spool.close()
        raise
    body = CsvBody(file=spool, size=size, generation=generation)
    return StreamingResponse(
        body.chunks(),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": 'attachment; filename="gmail-stats-domains.csv"',
            "Content-Length": str(body.size),
            **generation_headers(body.generation),
        },
    )
