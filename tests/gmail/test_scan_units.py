"""Pure parts of the scan: pacing, backoff, Google error translation, metadata → record, consent callbacks."""

from __future__ import annotations

import calendar
import random
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingester.gmail.consent import Callback, parse_callback
from ingester.gmail.gmail import GmailClient, MessageMeta
from ingester.gmail.gmail_google import error_from_response, parse_retry_after
from ingester.gmail.gmail_records import record_from_meta
from ingester.gmail.pacing import QuotaPacer, RetryPolicy
from ingester.settings import IngesterSettings
from tests.fakes.google_wire import error_body


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds
        return False


def test_pacer_schedules_back_to_back_at_the_rate() -> None:
    clock = FakeTime()
    pacer = QuotaPacer(250, monotonic=clock.monotonic, wait=clock.wait)
    for _ in range(10):
        assert pacer.acquire(250) is False
    # 10 batches of 250 units at 95 % of 250 units/s: the first starts at once, the tenth after 9/0.95 s.
    assert clock.now == pytest.approx(100 + 9 / 0.95)


def test_pacer_halves_after_429_and_recovers() -> None:
    clock = FakeTime()
    pacer = QuotaPacer(200, monotonic=clock.monotonic, wait=clock.wait)
    ceiling = 200 * 0.95
    assert pacer.rate() == pytest.approx(ceiling)
    pacer.throttled()
    pacer.throttled()  # the same burst: counted once
    assert pacer.rate() == pytest.approx(ceiling / 2)
    clock.now += 1
    pacer.throttled()
    assert pacer.rate() < ceiling / 2
    clock.now += 2.5
    assert ceiling / 4 < pacer.rate() < ceiling
    clock.now += 2.5
    assert pacer.rate() == pytest.approx(ceiling)
    for _ in range(100):
        clock.now += 1
        pacer.throttled()
    assert ceiling * 0.1 <= pacer.rate() < ceiling / 4  # a storm keeps it low, never below 10 % of the ceiling


def test_pacer_holds_for_retry_after_and_cancel_stops_waiting() -> None:
    clock = FakeTime()
    pacer = QuotaPacer(1000, monotonic=clock.monotonic, wait=clock.wait)
    pacer.hold(3.0)
    pacer.acquire(5)
    assert clock.now == pytest.approx(103.0)
    cancelled = QuotaPacer(1, monotonic=clock.monotonic, wait=lambda s: True)
    cancelled.acquire(5)
    assert cancelled.acquire(5) is True


@pytest.mark.parametrize("attempt", [1, 2, 3, 6, 10])
def test_backoff_is_bounded_exponential_with_jitter(attempt: int) -> None:
    policy = RetryPolicy(attempts=10, base_seconds=0.25, cap_seconds=8.0)
    ceiling = min(8.0, 0.25 * 2 ** (attempt - 1))
    delays = {policy.delay(attempt, random.Random(seed)) for seed in range(20)}
    assert all(ceiling / 2 <= d <= ceiling for d in delays)
    assert len(delays) > 1


@pytest.mark.parametrize(
    ("status", "reason", "kind", "transient"),
    [
        (429, "rateLimitExceeded", "rate_limited", True),
        (403, "userRateLimitExceeded", "rate_limited", True),
        (403, "rateLimitExceeded", "rate_limited", True),
        (403, "insufficientPermissions", "gmail_api", False),
        (404, "notFound", "not_found", False),
        (500, "backendError", "gmail_api", True),
        (502, "backendError", "gmail_api", True),
        (503, "backendError", "gmail_api", True),
        (504, "backendError", "gmail_api", True),
        (400, "invalidArgument", "gmail_api", False),
    ],
)
def test_google_errors_are_classified(status: int, reason: str, kind: str, transient: bool) -> None:
    error = error_from_response(status, error_body(status, "text", reason, "X"), what="call")
    assert (error.kind, error.transient, error.status, error.reason) == (kind, transient, status, reason)


def test_error_translation_survives_non_json() -> None:
    error = error_from_response(502, b"<html>bad gateway</html>", what="batch")
    assert error.transient and error.kind == "gmail_api"


def test_retry_after_is_read_from_googles_message() -> None:
    message = "User-rate limit exceeded.  Retry after 2026-11-30T19:30:05.250Z"
    expected = calendar.timegm(time.strptime("2026-11-30T19:30:05", "%Y-%m-%dT%H:%M:%S")) + 0.25
    assert parse_retry_after(message) == pytest.approx(expected)
    assert parse_retry_after("User-rate limit exceeded.") is None
    error = error_from_response(429, error_body(429, message, "rateLimitExceeded", "RESOURCE_EXHAUSTED"), what="x")
    assert error.retry_at == pytest.approx(expected)


def _meta(
    labels: tuple[str, ...], headers: tuple[tuple[str, str], ...], internal: int | None = 1_700_000_000_000
) -> MessageMeta:
    return MessageMeta("18c6a", labels, 1234, internal, headers)


@pytest.mark.parametrize(
    ("labels", "headers", "expected"),
    [
        (("INBOX",), (("From", "Alice <Alice@Example.com>"), ("Message-ID", " <a@b> ")), ("alice@example.com", "a@b")),
        (("INBOX",), (("From", ""), ("Sender", "bob@x.org")), ("bob@x.org", None)),
        (("INBOX",), (("Return-Path", "<bounce@y.org>"),), ("bounce@y.org", None)),
        (("INBOX",), (), ("", None)),
        (("INBOX",), (("From", "=?utf-8?q?Caf=C3=A9?= <cafe@x.org>"),), ("cafe@x.org", None)),
    ],
)
def test_metadata_becomes_a_record_by_the_import_rules(
    labels: tuple[str, ...], headers: tuple[tuple[str, str], ...], expected: tuple[str, str | None]
) -> None:
    record = record_from_meta(_meta(labels, headers))
    assert record is not None
    assert (record.sender, record.rfc_message_id) == expected
    assert record.mail_id == record.gmail_id == "18c6a"
    assert record.size_bytes == 1234


@pytest.mark.parametrize("label", ["SPAM", "TRASH", "CHAT"])
def test_spam_trash_and_chat_are_excluded(label: str) -> None:
    assert record_from_meta(_meta(("INBOX", label), (("From", "a@b.c"),))) is None


def test_unread_unsubscribe_and_dates() -> None:
    record = record_from_meta(
        _meta(("UNREAD", "INBOX"), (("From", "a@b.c"), ("List-Unsubscribe", "<mailto:u@b.c>"), ("Date", "junk")))
    )
    assert record is not None
    assert record.unread and record.list_unsubscribe
    assert record.date_unix == 1_700_000_000  # unreadable Date → internalDate
    dated = record_from_meta(_meta((), (("Date", "Fri, 04 Dec 2020 20:33:24 +0000"),)))
    assert dated is not None and dated.date_unix == 1607114004 and not dated.unread


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/?state=s1&code=c1&scope=x", Callback(code="c1", error=None)),
        ("/?state=s1&error=access_denied", Callback(code=None, error="access_denied")),
        ("/?state=other&code=c1", None),
        ("/favicon.ico", None),
        ("/?state=s1", None),
        ("/?code=c1", None),
    ],
)
def test_only_a_callback_with_our_state_counts(path: str, expected: Callback | None) -> None:
    assert parse_callback(path, state="s1") == expected


def test_scan_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GMAIL_STATS_QUOTA_UNITS_PER_SEC", "100")
    monkeypatch.setenv("GMAIL_STATS_OAUTH_BIND", "0.0.0.0")
    settings = IngesterSettings()
    assert settings.quota_units_per_sec == 100
    assert settings.oauth_bind == "0.0.0.0"
    assert (settings.oauth_port, settings.auth_timeout, settings.api_endpoint) == (
        8765,
        600.0,
        "https://gmail.googleapis.com/",
    )


@given(status=st.integers(100, 599), content=st.binary(max_size=300))
def test_error_translation_never_raises(status: int, content: bytes) -> None:
    error = error_from_response(status, content, what="call")
    assert error.status == status and error.kind in {"rate_limited", "not_found", "gmail_api"}


@given(st.text(max_size=200))
def test_retry_after_parsing_never_raises(text: str) -> None:
    value = parse_retry_after(text)
    assert value is None or isinstance(value, float)


@given(st.text(max_size=100), st.text(max_size=40))
def test_callback_parsing_never_raises(path: str, state: str) -> None:
    callback = parse_callback("/?" + path, state=state or "s")
    assert callback is None or callback.code or callback.error


@pytest.mark.parametrize(("units", "batch"), [(250, 50), (1e6, 50), (100, 20), (3, 1)])
def test_batches_never_cost_more_than_a_second_of_quota(units: float, batch: int) -> None:
    import threading

    from ingester.gmail.fetcher import Fetcher

    clock = FakeTime()
    pacer = QuotaPacer(units, monotonic=clock.monotonic, wait=clock.wait)

    def no_client() -> GmailClient:
        raise AssertionError("sizing a batch connects to nothing")

    fetcher = Fetcher(
        no_client,
        pacer=pacer,
        policy=RetryPolicy(attempts=7, base_seconds=0.25),
        workers=1,
        cancel=threading.Event(),
    )
    try:
        assert fetcher.batch_size == batch
    finally:
        fetcher.close()
