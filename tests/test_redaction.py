"""No database password in any message: every DSN form, against a server that refuses the connection.

Every password fragment below contains "GIZLI", so one substring check covers the pieces libpq
makes of a password with a raw "@" (it reads part of it as the host and repeats that in its
error text).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ragcore import store as dbmod
from ragcore.store import Database, DatabaseError
from tests.app_support import REPO, reset_app, set_app_env
from ui import shell

MARK = "GIZLI"


def _refusing_port() -> int:
    """A localhost port nothing listens on (bound, then closed): connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PORT = _refusing_port()
DSNS = {
    "url": f"postgresql://dayanak:{MARK}-parola@127.0.0.1:{PORT}/dayanak",
    "url-encoded-at-colon": f"postgresql://dayanak:{MARK}1%40{MARK}2%3A{MARK}3@127.0.0.1:{PORT}/dayanak",
    "url-raw-at": f"postgresql://dayanak:{MARK}1@{MARK}2@127.0.0.1:{PORT}/dayanak",
    "url-raw-colon": f"postgresql://dayanak:{MARK}1:{MARK}2@127.0.0.1:{PORT}/dayanak",
    "url-raw-slash": f"postgresql://dayanak:{MARK}1/{MARK}2@127.0.0.1:{PORT}/dayanak",
    "url-query": f"postgresql://dayanak@127.0.0.1:{PORT}/dayanak?password={MARK}-sorgu&sslmode=disable",
    "url-query-at": f"postgresql://dayanak@127.0.0.1:{PORT}/dayanak?password={MARK}1@{MARK}2",
    "keyvalue": f"host=127.0.0.1 port={PORT} user=dayanak password={MARK}-kv dbname=dayanak",
    "keyvalue-quoted": f"host=127.0.0.1 port={PORT} user=dayanak password='{MARK}1 @{MARK}2:{MARK}3' dbname=dayanak",
    "keyvalue-unparseable": f"host=127.0.0.1 port={PORT} password={MARK}1 {MARK}2 dbname=dayanak",
}


@pytest.mark.parametrize("name", sorted(DSNS))
def test_unreachable_database_message_has_no_password(name: str, caplog: pytest.LogCaptureFixture) -> None:
    dsn = DSNS[name]
    caplog.set_level(logging.DEBUG)
    with pytest.raises(DatabaseError) as raised:
        Database(dsn)
    message = str(raised.value)
    assert message.startswith("Database unreachable (")
    assert MARK not in message, message
    assert MARK not in caplog.text
    # The driver's exception (which may quote the string) is not chained into tracebacks.
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


@pytest.mark.parametrize("name", ["url", "url-encoded-at-colon", "url-query", "keyvalue", "keyvalue-quoted"])
def test_unambiguous_dsns_keep_everything_but_the_password(name: str) -> None:
    shown = dbmod.redact_dsn(DSNS[name])
    assert MARK not in shown and "password=***" in shown
    assert "host=127.0.0.1" in shown and f"port={PORT}" in shown and "user=dayanak" in shown


@pytest.mark.parametrize("name", ["url-raw-at", "url-raw-slash", "url-query-at", "keyvalue-unparseable"])
def test_ambiguous_dsns_are_hidden_with_a_hint(name: str) -> None:
    assert "%40" in dbmod.redact_dsn(DSNS[name]) and MARK not in dbmod.redact_dsn(DSNS[name])
    assert MARK not in dbmod.redact_message(f"could not resolve host '{MARK}2'", DSNS[name])


def test_every_encoding_of_the_password_is_removed_from_messages() -> None:
    dsn = DSNS["url-encoded-at-colon"]
    for text in (f"{MARK}1@{MARK}2:{MARK}3", f"{MARK}1%40{MARK}2%3A{MARK}3"):
        assert MARK not in dbmod.redact_message(f"x {text} y", dsn)


@pytest.fixture()
def unreachable_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    set_app_env(monkeypatch, DATA_DIR=str(tmp_path / "data"))
    reset_app()
    yield
    reset_app()


@pytest.mark.parametrize("name", ["url", "url-raw-at", "url-query", "keyvalue", "keyvalue-unparseable"])
def test_anonymous_visitors_get_a_generic_turkish_message(name: str, unreachable_app, monkeypatch, caplog) -> None:
    monkeypatch.setenv("DATABASE_URL", DSNS[name])
    caplog.set_level(logging.INFO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert errors == [shell.DATABASE_UNREACHABLE]
    everything = "\n".join(str(node.proto) for node in at.get("alert")) + "\n".join(str(m.value) for m in at.markdown)
    assert MARK not in everything and "Ayrıntı" not in everything and "password" not in everything
    assert "database unavailable: Database unreachable (" in caplog.text  # the details went to the log
    assert MARK not in caplog.text
