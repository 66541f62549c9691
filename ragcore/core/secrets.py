"""Secrets that have no defaults: taken from the environment or generated once, kept 0600.

A generated secret is published whole: it is written to a private temporary file in the same
folder (0600 from creation), fsynced, then hard-linked to its name, so a reader finds either no
file or the whole secret, never an empty one. When two processes generate one at the same time,
the second link fails because the name exists, and that process reads the first one's secret
instead of writing its own. An empty secret file (an older version created the file before
writing it, so a crash in between left one) is refused, never used as an empty key.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from ragcore.core.config import Settings
from ragcore.core.files import create_private
from ragcore.core.files import private_dir as _private_dir


class SecretError(RuntimeError):
    """A secret file holds no secret; the message names the file and what to do."""


def _read(path: Path, variable: str) -> str:
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise SecretError(f"the secret file {path} is empty; delete it so that a new secret is generated, "
                          f"or set {variable}")
    return value


def _sync_dir(folder: Path) -> None:
    """Make a new name in `folder` survive a power loss (the file's own fsync does not cover it)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_or_create(path: Path, make: Callable[[], str], variable: str) -> tuple[str, bool]:
    """Return (value, created): the secret in `path`, or a new one from `make`, published whole.

    `variable` is the setting that replaces the file (named when the file is empty).
    """
    try:
        return _read(path, variable), False
    except FileNotFoundError:
        pass
    value = make()
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        with create_private(tmp) as handle:
            handle.write(f"{value}\n".encode())
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:  # another process published its secret first: that one counts
            return _read(path, variable), False
    finally:
        tmp.unlink(missing_ok=True)
    _sync_dir(path.parent)
    return value, True


def cookie_key(settings: Settings) -> str:
    """The login cookie signing key: COOKIE_KEY, or one generated into DATA_DIR/secrets."""
    if settings.cookie_key:
        return settings.cookie_key
    path = _private_dir(settings.secrets_dir) / "cookie_key"
    value, _ = _read_or_create(path, lambda: secrets.token_urlsafe(48), "COOKIE_KEY")
    return value


def initial_admin_password(settings: Settings) -> tuple[str, bool]:
    """ADMIN_PASSWORD, or a generated one stored 0600 under DATA_DIR. Returns (password, generated_now)."""
    if settings.admin_password:
        return settings.admin_password, False
    path = _private_dir(settings.secrets_dir) / "initial_admin_password"
    return _read_or_create(path, lambda: secrets.token_urlsafe(12), "ADMIN_PASSWORD")


def initial_admin_password_path(settings: Settings) -> Path:
    return settings.secrets_dir / "initial_admin_password"
