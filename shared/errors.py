"""The error hierarchy every gmail-stats component raises; foreign exceptions are translated at one boundary."""

from __future__ import annotations


class GmailStatsError(Exception):
    """Base of every error we raise on purpose; `kind` is a stable machine-readable name."""

    kind: str = "error"
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

    kind = "usage"
    exit_code = 2


class LockHeldError(GmailStatsError):
    """Another ingester holds the database's ingest lock."""

    kind = "locked"
    exit_code = 75


class DatabaseError(GmailStatsError):
    """The database is unreadable, too new for this code, or otherwise unusable."""

    kind = "db"


class SchemaTooNewError(DatabaseError):
    """The database was written by a newer gmail-stats; we refuse to touch it."""

    kind = "db_too_new"


class InputFileError(GmailStatsError):
    """An import path is missing, not a regular file, or not an mbox."""

    kind = "io"


class RunNotFoundError(GmailStatsError):
    """A run id given on the command line does not exist or cannot be resumed this way; nothing was done."""

    kind = "bad_resume"
    exit_code = 2


class GmailAuthError(GmailStatsError):
    """Gmail access could not be authorised: `missing_credentials`, `auth_required` or `policy_enforced`."""

    kind = "auth_required"


class GmailApiError(GmailStatsError):
    """Gmail answered with an error we could not work around: `rate_limited`, `gmail_api`, or a narrower kind.

    `status` is the HTTP status (None for a transport failure), `reason` Google's machine reason, `transient`
    whether a retry may succeed, `retry_at` a wall-clock time Google asked us to wait for.
    """

    kind = "gmail_api"

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
