"""The viewer bench's database: 200,000 senders over 30,000 registrable domains and 2,000,000 messages over ten
years, generated once with bulk SQL through the real migrations and cached at `bench/out/` (git-ignored).

Only building the file and naming its senders; bench_viewer.py measures the viewer on it.
"""

from __future__ import annotations

import time
from pathlib import Path

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.migration_rollups import BACKFILL_ROLLUPS
from shared.schema.migration_search import SEARCH_KEY_SQL
from shared.schema.migrations import LATEST_VERSION, migrate
from shared.schema.models import search_key
from shared.text.domains import registrable_domain

OUT = Path(__file__).parent / "out"
DB = OUT / f"viewer-200k-v{LATEST_VERSION}.db"
SENDERS = 200_000
MESSAGES = 2_000_000
DOMAINS = 30_000
FIRST_DAY = 1_420_070_400  # 2015-01-01


def generate(db: Path) -> None:
    """Every sender gets one message, the rest go to a skewed few (most mail from few senders, as in real life).

    Senders spread over 30,000 registrable domains, ten years of dates, a third with unsubscribe links. The
    rollups are then built by the migration's own backfill statements, the search index by FTS5's rebuild.
    """
    OUT.mkdir(exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    engine = writer_engine(db)
    migrate(engine)
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.exec_driver_sql(
            f"""
            WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < {MESSAGES - 1}),
            -- Materialised: otherwise each use of `k` below draws its own random() values.
            m AS MATERIALIZED (
                SELECT x, CASE WHEN x < {SENDERS} THEN x
                          ELSE CAST({SENDERS} * ((abs(random()) % 1000000) / 1e6)
                                              * ((abs(random()) % 1000000) / 1e6)
                                              * ((abs(random()) % 1000000) / 1e6) AS INTEGER) END AS k FROM n)
            INSERT INTO seen_mails (mail_id, rfc_message_id, sender, date_unix, size_bytes, unread, source, run_id,
                                    counted)
            SELECT 'mid:' || x || '@bench', x || '@bench',
                   's' || k || '@news.d' || (k % {DOMAINS}) || '.co.uk',
                   {FIRST_DAY} + (x * 97) % 315360000, 2000 + (x * 7919) % 150000, (x * 31) % 3 = 0, 'mbox', 1, 1
            FROM m
            """
        )
        conn.exec_driver_sql(
            """
            INSERT INTO senders (sender, display_name, mails_sent, first_seen_unix, last_seen_unix, bytes, unread,
                                 list_unsubscribe, domain, unsubscribe_web, unsubscribe_mailto, unsubscribe_unix,
                                 one_click)
            SELECT sender, 'Sender ' || substr(sender, 2, instr(sender, '@') - 2), count(*), min(date_unix),
                   max(date_unix), sum(size_bytes), sum(unread), (length(sender) % 3 = 0) * count(*),
                   substr(sender, instr(sender, '@') + 6),
                   CASE WHEN length(sender) % 3 = 0
                        THEN 'https://' || substr(sender, instr(sender, '@') + 1) || '/u' END,
                   NULL, CASE WHEN length(sender) % 3 = 0 THEN max(date_unix) END, length(sender) % 2
            FROM seen_mails GROUP BY sender
            """
        )
        conn.exec_driver_sql(f"UPDATE senders SET search_key = {SEARCH_KEY_SQL}")
        conn.exec_driver_sql(
            "INSERT INTO sender_months (sender, month, messages, bytes)"
            " SELECT sender, strftime('%Y-%m', date_unix, 'unixepoch'), count(*), sum(size_bytes)"
            " FROM seen_mails GROUP BY 1, 2"
        )
        for statement in BACKFILL_ROLLUPS:
            conn.exec_driver_sql(statement)
        conn.exec_driver_sql("INSERT INTO sender_search (sender_search) VALUES ('rebuild')")
        assert conn.exec_driver_sql("SELECT count(*) FROM senders").scalar_one() == SENDERS
        sample = conn.exec_driver_sql("SELECT sender, domain, display_name, search_key FROM senders LIMIT 1").one()
        assert registrable_domain(sample[0]) == sample[1], sample  # the generator's domains are the real rule's
        assert search_key(sample[0], sample[2]) == sample[3], sample  # and its search keys the ingester's
        conn.exec_driver_sql(
            f"""
            INSERT INTO ingest_runs (source, state, pid, started_at_unix, updated_at_unix, finished_at_unix,
                                     messages_seen, messages_new, bytes_total, bytes_done, outcome)
            VALUES ('mbox', 'done', 1, 1700000000, 1700000600, 1700000600, {MESSAGES}, {MESSAGES}, 1, 1, 'complete')
            """
        )
    close_writer_keeping_sidecars(engine, db)
    print(f"generated {db} in {time.perf_counter() - started:.0f} s ({db.stat().st_size / 1e6:.0f} MB)")


def address(k: int) -> str:
    """The address `generate` gives sender number `k` (0 sends the most mail)."""
    return f"s{k}@news.d{k % DOMAINS}.co.uk"
