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
from shared.text.csv_cells import neutralise_row
from viewer.errors import ApiError
from viewer.query import rollup_queries
from viewer.query.queries import DbState
from viewer.query.rollup_queries import DomainRow, DomainSort
from viewer.query.sender_queries import SortOrder
from viewer.web.api import _hidden
from viewer.web.deps import StateDep
from viewer.web.export import MEMORY_BYTES, CsvBody, iso_date
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
        if database.exists():
            with database.connect() as conn:
                snap = database.require_ready(conn)
                if snap.state is DbState.READY:
                    hidden = _hidden(database, state.index, conn, f.exclude)
                    page = rollup_queries.domains_page(
                        conn,
                        q=f.q,
                        sort=sort,
                        order=order,
                        offset=0,
                        limit=_EVERY,
                        totals=snap.totals,
                        hidden=hidden.senders.by_domain,
                        seen=database.hidden.seen_without(conn, hidden.version, hidden.senders, hidden.memory),
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
    body = CsvBody(file=spool, size=size)
    return StreamingResponse(
        body.chunks(),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": 'attachment; filename="gmail-stats-domains.csv"',
            "Content-Length": str(body.size),
        },
    )
