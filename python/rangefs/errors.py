"""Exceptions of the rangefs package: one per absl::Status code.

Every class derives from :class:`rangefs.Error` (an ``OSError``) and, where
Python has a matching built-in, from that too, so callers can catch either::

    try:
        client.open("/missing")
    except FileNotFoundError:  # rangefs.NotFound
        ...

``code`` is the status code's name (``"NOT_FOUND"``), ``str(e)`` the
library's message, which says what failed and where.
"""

from __future__ import annotations


class Error(OSError):
    """A rangefs call failed; ``code`` names the absl::Status code."""

    code = "UNKNOWN"


class NotFound(Error, FileNotFoundError):
    """NOT_FOUND: no such file in the namespace."""

    code = "NOT_FOUND"


class InvalidArgument(Error, ValueError):
    """INVALID_ARGUMENT: a bad path or option."""

    code = "INVALID_ARGUMENT"


class DeadlineExceeded(Error, TimeoutError):
    """DEADLINE_EXCEEDED: the call's deadline passed."""

    code = "DEADLINE_EXCEEDED"


class Unavailable(Error, ConnectionError):
    """UNAVAILABLE: etcd or every replica of a piece could not be reached."""

    code = "UNAVAILABLE"


class PermissionDenied(Error, PermissionError):
    """PERMISSION_DENIED or UNAUTHENTICATED (etcd auth, agent TLS)."""

    code = "PERMISSION_DENIED"


class DataLoss(Error):
    """DATA_LOSS: every replica failed its checksum, or a record is broken."""

    code = "DATA_LOSS"


class Aborted(Error):
    """ABORTED: the file was replaced or resized since it was opened; reopen."""

    code = "ABORTED"


class NotReady(Error):
    """FAILED_PRECONDITION: e.g. the file is still being ingested."""

    code = "FAILED_PRECONDITION"


class OutOfRange(Error, ValueError):
    """OUT_OF_RANGE: an offset past the end, or a compacted revision."""

    code = "OUT_OF_RANGE"


class Cancelled(Error):
    """CANCELLED: the call was cancelled."""

    code = "CANCELLED"


# absl::StatusCode values (absl/status/status.h).
_CODES = {
    1: (Cancelled, "CANCELLED"),
    2: (Error, "UNKNOWN"),
    3: (InvalidArgument, "INVALID_ARGUMENT"),
    4: (DeadlineExceeded, "DEADLINE_EXCEEDED"),
    5: (NotFound, "NOT_FOUND"),
    6: (Error, "ALREADY_EXISTS"),
    7: (PermissionDenied, "PERMISSION_DENIED"),
    8: (Error, "RESOURCE_EXHAUSTED"),
    9: (NotReady, "FAILED_PRECONDITION"),
    10: (Aborted, "ABORTED"),
    11: (OutOfRange, "OUT_OF_RANGE"),
    12: (Error, "UNIMPLEMENTED"),
    13: (Error, "INTERNAL"),
    14: (Unavailable, "UNAVAILABLE"),
    15: (DataLoss, "DATA_LOSS"),
    16: (PermissionDenied, "UNAUTHENTICATED"),
}


def from_status(code: int, message: str) -> Error:
    """The exception for a non-OK absl::Status (used by the extension)."""
    cls, name = _CODES.get(code, (Error, "UNKNOWN"))
    e = cls(f"{name}: {message}")
    e.code = name
    return e
