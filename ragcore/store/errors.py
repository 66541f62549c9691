"""The store's errors: what a caller catches when the database cannot be used."""

from __future__ import annotations


class DatabaseError(RuntimeError):
    """The database cannot be used; the message says why and what to do."""


class DatabaseUnavailable(DatabaseError):
    """The server does not answer right now (stopped, restarting, unreachable); try again later."""
