"""The error hierarchy every gmail-stats component raises, and `ErrorKind`, the one list of machine-readable kinds.

Foreign exceptions are translated at one boundary. A kind reaches users three ways: a run row's `error_kind`
(the page's remedies), an HTTP error body `{"error": kind}`, and the CLI's one-line message; docs/api.md lists
them all, and a test checks that the page and the docs cover every kind.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorKind(StrEnum):
    # Runs and the CLI: a failed run's `error_kind`, each with a remedy on the page.
    ABANDONED = "abandoned"  # the ingester died without recording an end
    AUTH_REQUIRED = "auth_required"
    MISSING_CREDENTIALS = "missing_credentials"
    POLICY_ENFORCED = "policy_enforced"
    RATE_LIMITED = "rate_limited"
    GMAIL_API = "gmail_api"
    IO = "io"
    DB = "db"
    # The CLI and Gmail adapter only (never stored on a run).
    ERROR = "error"
    USAGE = "usage"
    LOCKED = "locked"
    DB_TOO_NEW = "db_too_new"
    BAD_RESUME = "bad_resume"
    BAD_PAGE_TOKEN = "bad_page_token"
    HISTORY_EXPIRED = "history_expired"
    NOT_FOUND = "not_found"  # also HTTP 404
    # HTTP error bodies of the viewer.
    BAD_REQUEST = "bad_request"
    BAD_HOST = "bad_host"
    BAD_CONTENT_TYPE = "bad_content_type"
    CSRF = "csrf"
    TOO_LARGE = "too_large"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    INTERNAL = "internal"
    BUSY = "busy"
    DB_UNREADABLE = "db_unreadable"
    EXPORT_FAILED = "export_failed"
    RUN_ACTIVE = "run_active"
    NOT_OWNED = "not_owned"
    NOT_RUNNING = "not_running"
    SPAWN_FAILED = "spawn_failed"
    BAD_SOURCE = "bad_source"
    BAD_PATH = "bad_path"
    BAD_SCOPE = "bad_scope"
    HTTP_ERROR = "http_error"  # any other HTTP-level refusal (a status the viewer has no kind for)
    UNKNOWN_ACCOUNT = "unknown_account"  # `?account=` names no account of this data folder
    HIDDEN_UNKNOWN = "hidden_unknown"  # a `hidden=` id this viewer does not hold (restarted): send the set again


# The kinds a run row can end with: the page needs a remedy for each.
RUN_ERROR_KINDS = frozenset(
    {
        ErrorKind.ABANDONED,
        ErrorKind.AUTH_REQUIRED,
        ErrorKind.MISSING_CREDENTIALS,
        ErrorKind.POLICY_ENFORCED,
        ErrorKind.RATE_LIMITED,
        ErrorKind.GMAIL_API,
        ErrorKind.IO,
        ErrorKind.DB,
    }
)
# What the ingester and its CLI report: a run's `error_kind` or the CLI's one-line message (docs/reference.md).
INGESTER_ERROR_KINDS = RUN_ERROR_KINDS | frozenset(
    {
        ErrorKind.ERROR,
        ErrorKind.INTERNAL,
        ErrorKind.USAGE,
        ErrorKind.LOCKED,
        ErrorKind.DB_TOO_NEW,
        ErrorKind.BAD_RESUME,
        ErrorKind.BAD_PAGE_TOKEN,
        ErrorKind.HISTORY_EXPIRED,
        ErrorKind.NOT_FOUND,
    }
)
# What the viewer answers as `{"error": kind}` (docs/reference.md, with each kind's status); every kind is in one or
# both of these lists.
HTTP_ERROR_KINDS = frozenset(
    {
        ErrorKind.BAD_REQUEST,
        ErrorKind.BAD_SOURCE,
        ErrorKind.BAD_PATH,
        ErrorKind.BAD_RESUME,
        ErrorKind.BAD_SCOPE,
        ErrorKind.RUN_ACTIVE,
        ErrorKind.NOT_OWNED,
        ErrorKind.NOT_RUNNING,
        ErrorKind.SPAWN_FAILED,
        ErrorKind.BAD_HOST,
        ErrorKind.BAD_CONTENT_TYPE,
        ErrorKind.CSRF,
        ErrorKind.TOO_LARGE,
        ErrorKind.BUSY,
        ErrorKind.DB_UNREADABLE,
        ErrorKind.DB_TOO_NEW,
        ErrorKind.EXPORT_FAILED,
        ErrorKind.NOT_FOUND,
        ErrorKind.METHOD_NOT_ALLOWED,
        ErrorKind.HTTP_ERROR,
        ErrorKind.HIDDEN_UNKNOWN,
        ErrorKind.UNKNOWN_ACCOUNT,
        ErrorKind.INTERNAL,
    }
)
# A retry warning starts with this; `/api/status` reports `retrying` from it instead of the page guessing from prose.
RETRY_WARNING_PREFIX = "retrying:"


class GmailStatsError(Exception):
    """Base of every error we raise on purpose; `kind` is a stable machine-readable name."""

    kind: str = ErrorKind.ERROR
    exit_code: int = 1

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind

    @property
    def message(self) -> str:
        return str(self)


class UsageError(GmailStatsError):
    """The command line or a setting is wrong; nothing was done."""

    kind = ErrorKind.USAGE
    exit_code = 2


class LockHeldError(GmailStatsError):
    """Another ingester holds the database's ingest lock."""

    kind = ErrorKind.LOCKED
    exit_code = 75


class DatabaseError(GmailStatsError):
    """The database is unreadable, too new for this code, or otherwise unusable."""

    kind = ErrorKind.DB


class SchemaTooNewError(DatabaseError):
    """The database was written by a newer gmail-stats; we refuse to touch it."""

    kind = ErrorKind.DB_TOO_NEW


class InputFileError(GmailStatsError):
    """An import path is missing, not a regular file, or not an mbox."""

    kind = ErrorKind.IO


class RunNotFoundError(GmailStatsError):
    """A run id given on the command line does not exist or cannot be resumed this way; nothing was done."""

    kind = ErrorKind.BAD_RESUME
    exit_code = 2


class GmailAuthError(GmailStatsError):
    """Gmail access could not be authorised: `missing_credentials`, `auth_required` or `policy_enforced`."""

    kind = ErrorKind.AUTH_REQUIRED


class ConsentPortBusy(GmailAuthError):
    """Another account's scan waits for consent on the callback port: try again once that consent ends."""

    kind = ErrorKind.AUTH_REQUIRED
    exit_code = 75


class GmailApiError(GmailStatsError):
    """Gmail answered with an error we could not work around: `rate_limited`, `gmail_api`, or a narrower kind.

    `status` is the HTTP status (None for a transport failure), `reason` Google's machine reason, `transient`
    whether a retry may succeed, `retry_at` a wall-clock time Google asked us to wait for.
    """

    kind = ErrorKind.GMAIL_API

    def __init__(
        self,
        message: str,
        *,
        kind: str | None = None,
        status: int | None = None,
        reason: str = "",
        transient: bool = False,
        retry_at: float | None = None,
    ) -> None:
        super().__init__(message, kind=kind)
        self.status = status
        self.reason = reason
        self.transient = transient
        self.retry_at = retry_at
