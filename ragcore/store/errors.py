"""The store's errors: what a caller catches when the database cannot be used."""

from __future__ import annotations


class DatabaseError(RuntimeError):
    """The database cannot be used; the message says why and what to do."""


class DatabaseUnavailable(DatabaseError):
    """The server does not answer right now (stopped, restarting, unreachable); try again later."""


class EmbeddedStartError(DatabaseUnavailable):
    """The embedded server would not start (or runs and never becomes ready). `kind` names the
    cause its log gave, for renderings in other languages (the app's Turkish panel): "disk_full",
    "shared_memory", "lock_file", "port_in_use", "permissions" or "unknown"; the message says it
    in English with what to do. Unavailable rather than broken: once the cause is fixed the next
    request starts it again."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind
