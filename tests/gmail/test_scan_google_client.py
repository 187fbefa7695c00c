"""The real google-api-python-client, through our adapter, against the fake Google on a socket."""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingester.gmail.auth import GoogleAccess, load_token_cache
from ingester.gmail.fetcher import Fetcher
from ingester.gmail.gmail import GmailClient
from ingester.gmail.pacing import QuotaPacer, RetryPolicy
from shared.errors import GmailApiError, GmailAuthError
from tests.fakes.google import FakeGoogle
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.mailbox import Mailbox
from tests.support.scan import file_mode


@pytest.fixture
def google() -> Iterator[FakeGoogle]:
    fake = FakeGoogle(Mailbox.generate(1200, seed=3))
    with FakeGoogleServer(fake):
        yield fake


@pytest.fixture
def client(google: FakeGoogle, tmp_path: Path) -> Iterator[GmailClient]:
    (tmp_path / "credentials.json").write_text(json.dumps(google.client_config()))
    (tmp_path / "tokens.json").write_text(json.dumps(google.authorized_user_info()))
    access = GoogleAccess(
        credentials_path=tmp_path / "credentials.json",
        tokens_path=tmp_path / "tokens.json",
        oauth_bind="127.0.0.1",
        oauth_port=0,
        auth_timeout=1,
        api_endpoint=google.base_url,
        http_timeout=10,
        note=lambda text: None,
    )
    made = access.connect(on_consent_url=lambda url: None, cancel=threading.Event())()
    yield made
    made.close()


def test_profile_list_and_batch_get(google: FakeGoogle, client: GmailClient) -> None:
    profile = client.get_profile()
    assert profile.messages_total == 1200
    first = client.list_messages(page_token=None)
    assert len(first.ids) == 500 and first.next_page_token
    listed = list(first.ids)
    token: str | None = first.next_page_token
    while token:
        page = client.list_messages(page_token=token)
        listed += page.ids
        token = page.next_page_token
    assert listed == google.mailbox.listed(include_spam_trash=False)
    result = client.get_messages(listed[:50])
    assert not result.failures
    assert [m.gmail_id for m in result.messages] == listed[:50]
    meta = result.messages[0]
    source = google.mailbox.messages[meta.gmail_id]
    assert meta.label_ids == source.label_ids and meta.size_estimate == source.size_estimate
    assert meta.header("From") == source.header("From")
    # One batch POST on our endpoint (not Google's batch host) carried the 50 calls.
    assert google.calls["batch"] == 1 and google.calls["get"] == 50


def test_batch_reports_404_and_5xx_per_message(google: FakeGoogle, client: GmailClient) -> None:
    ids = google.mailbox.listed(include_spam_trash=False)[:5]
    google.faults.deleted.add(ids[1])
    google.faults.always_fail.add(ids[2])
    result = client.get_messages(ids)
    assert sorted(m.gmail_id for m in result.messages) == sorted([ids[0], ids[3], ids[4]])
    assert result.failures[ids[1]].status == 404 and not result.failures[ids[1]].transient
    assert result.failures[ids[2]].status == 500 and result.failures[ids[2]].transient


def test_history_and_its_expiry(google: FakeGoogle, client: GmailClient) -> None:
    start = client.get_profile().history_id
    assert client.list_history(start_history_id=start, page_token=None).ids == ()
    added = google.mailbox.add(3)
    page = client.list_history(start_history_id=start, page_token=None)
    assert page.ids == tuple(m.gmail_id for m in added)
    google.faults.history_expired = True
    with pytest.raises(GmailApiError) as caught:
        client.list_history(start_history_id=start, page_token=None)
    assert caught.value.kind == "history_expired"


def test_expired_page_token_and_rate_limit(google: FakeGoogle, client: GmailClient) -> None:
    token = client.list_messages(page_token=None).next_page_token
    google.expire_page_tokens()
    with pytest.raises(GmailApiError) as caught:
        client.list_messages(page_token=token)
    assert caught.value.kind == "bad_page_token"
    google.faults.storm_429_rate = 1.0
    google.faults.retry_after_seconds = 2.0
    with pytest.raises(GmailApiError) as limited:
        client.get_profile()
    assert limited.value.kind == "rate_limited" and limited.value.transient and limited.value.retry_at


def test_token_cache_keeps_the_client_files_token_uri(google: FakeGoogle, tmp_path: Path) -> None:
    info = google.authorized_user_info() | {"token_uri": "https://oauth2.googleapis.com/token"}
    (tmp_path / "tokens.json").write_text(json.dumps(info))
    creds = load_token_cache(tmp_path / "tokens.json", google.client_config())
    assert creds is not None and creds.token_uri == google.base_url + "token"


def test_revoked_token_refresh_then_expired_access_token(
    google: FakeGoogle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")  # the fake's OAuth endpoints are plain http
    (tmp_path / "credentials.json").write_text(json.dumps(google.client_config()))
    info = google.authorized_user_info() | {"expiry": "2000-01-01T00:00:00Z"}
    (tmp_path / "tokens.json").write_text(json.dumps(info))
    notes: list[str] = []
    access = GoogleAccess(
        credentials_path=tmp_path / "credentials.json",
        tokens_path=tmp_path / "tokens.json",
        oauth_bind="127.0.0.1",
        oauth_port=0,
        auth_timeout=0.5,
        api_endpoint=google.base_url,
        http_timeout=10,
        note=notes.append,
    )
    made = access.connect(on_consent_url=lambda url: None, cancel=threading.Event())()  # refreshed at the fake
    try:
        assert google.calls["token"] == 1
        assert made.get_profile().messages_total == 1200
        assert file_mode(tmp_path / "tokens.json") == 0o600
    finally:
        made.close()
    google.revoke_refresh_tokens()
    (tmp_path / "tokens.json").write_text(json.dumps(info))
    with pytest.raises(GmailAuthError) as caught:
        access.connect(on_consent_url=lambda url: None, cancel=threading.Event())
    assert caught.value.kind == "auth_required"
    assert "7 days" in notes[0] and "7 days" in str(caught.value)


def test_missing_or_bad_client_file(tmp_path: Path) -> None:
    for content in (None, "not json", json.dumps({"installed": {"client_id": "x"}})):
        path = tmp_path / "credentials.json"
        if content is not None:
            path.write_text(content)
        access = GoogleAccess(
            credentials_path=path,
            tokens_path=tmp_path / "tokens.json",
            oauth_bind="127.0.0.1",
            oauth_port=0,
            auth_timeout=1,
            api_endpoint="http://127.0.0.1:9/",  # never reached: the client file is refused first
            http_timeout=10,
            note=lambda text: None,
        )
        with pytest.raises(GmailAuthError) as caught:
            access.connect(on_consent_url=lambda url: None, cancel=threading.Event())
        assert caught.value.kind == "missing_credentials"
        assert "Desktop" in str(caught.value)


def test_retry_after_is_honoured_by_the_fetcher(google: FakeGoogle, client: GmailClient) -> None:
    google.faults.next_429 = 1
    google.faults.retry_after_seconds = 1.5
    fetcher = Fetcher(
        lambda: client,
        pacer=QuotaPacer(10_000, monotonic=time.monotonic, wait=threading.Event().wait),
        policy=RetryPolicy(attempts=3, base_seconds=0.01),
        workers=1,
        cancel=threading.Event(),
    )
    started = time.monotonic()
    profile = fetcher.call(1, lambda c: c.get_profile(), what="users.getProfile")
    assert profile.messages_total == 1200
    assert time.monotonic() - started >= 1.0  # Google's "Retry after", not the 10 ms backoff
    warnings = fetcher.drain_warnings()
    assert len(warnings) == 1 and "429" in warnings[0]
    fetcher._clients.clear()  # the fixture closes its client


# On a 401 inside a batch, googleapiclient's `_auth.refresh_credentials` refreshes through a fresh `httplib2.Http()`
# that it never closes. Outside this forced case google-auth refreshes before expiry, so batches never hit it.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_expired_access_tokens_are_refreshed_for_calls_and_batches(google: FakeGoogle, client: GmailClient) -> None:
    ids = google.mailbox.listed(include_spam_trash=False)[:50]
    refreshed = google.calls.get("token", 0)
    google.access_tokens.clear()  # every access token expired at Google; the refresh token still works
    assert client.list_messages(page_token=None).ids[:50] == tuple(ids)
    google.access_tokens.clear()
    result = client.get_messages(ids)
    assert not result.failures and len(result.messages) == 50
    assert google.calls["token"] == refreshed + 2
    gc.collect()  # let the library's leaked connection be collected inside this test, where it is expected
