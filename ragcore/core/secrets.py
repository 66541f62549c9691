"""Secrets that have no defaults: taken from the environment or generated once, kept 0600."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from ragcore.core.config import Settings
from ragcore.core.files import private_dir as _private_dir


def _read_or_create(path: Path, make: callable) -> tuple[str, bool]:  # type: ignore[valid-type]
    """Return (value, created). Creation is atomic (O_EXCL) so two processes agree on one value."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip(), False
    value = make()
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(value + "\n")
    return value, True


def cookie_key(settings: Settings) -> str:
    """The login cookie signing key: COOKIE_KEY, or one generated into DATA_DIR/secrets."""
    if settings.cookie_key:
        return settings.cookie_key
    value, _ = _read_or_create(_private_dir(settings.secrets_dir) / "cookie_key", lambda: secrets.token_urlsafe(48))
    return value


def initial_admin_password(settings: Settings) -> tuple[str, bool]:
    """ADMIN_PASSWORD, or a generated one stored 0600 under DATA_DIR. Returns (password, generated_now)."""
    if settings.admin_password:
        return settings.admin_password, False
    path = _private_dir(settings.secrets_dir) / "initial_admin_password"
    return _read_or_create(path, lambda: secrets.token_urlsafe(12))


def initial_admin_password_path(settings: Settings) -> Path:
    return settings.secrets_dir / "initial_admin_password"
