"""LDAP / Active Directory sign-in against a real OpenLDAP server (tests/ldap_support.py).

The server runs for the whole session on loopback ports; the tests that change the directory
(ali taken out of his group, veli deleted) use their own users, so order does not matter.
"""

from __future__ import annotations

from collections.abc import Iterator

import ldap3
import pytest
from streamlit.testing.v1 import AppTest

from ragcore.access import auth, authenticate_token, create_token, directory, ldap, sessions, users
from ragcore.core import Settings, SettingsError
from ragcore.store import Database
from tests import ldap_support as slapd
from tests.app_support import REPO, reset_app, set_app_env
from ui.auth import DIRECTORY_REVOKED
from ui.markdown import escape_markdown


@pytest.fixture(scope="session")
def directory_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slapd.Slapd]:
    missing = slapd.missing()
    if missing is not None:  # a skip would hide that the directory sign-in went untested
        pytest.fail(missing)
    server = slapd.start_slapd(tmp_path_factory.mktemp("slapd"))
    yield server
    server.stop()


@pytest.fixture()
def ldap_settings(settings: Settings, directory_server: slapd.Slapd) -> Settings:
    """Plain ldap:// on loopback, allowed here only; every request re-checks the directory."""
    return settings.replace(
        ldap_url=directory_server.url, ldap_allow_plain=True, ldap_user_base_dn=slapd.PEOPLE,
        ldap_group_base_dn=slapd.GROUPS, ldap_bind_dn=slapd.SERVICE_DN, ldap_bind_password=slapd.SERVICE_PASSWORD,
        ldap_disabled_group="dayanak-kapali", ldap_recheck_seconds=0.0, ldap_timeout_seconds=5.0)


@pytest.fixture()
def mapped(db: Database) -> Database:
    """The company's table: İSG team → isg, the whole production tree → uretim (by cn), HR by its DN."""
    with db.connection() as conn:
        conn.execute("DELETE FROM login_attempts")
    directory.add_group_role(db, "ldap", "isg-ekibi", "isg")
    directory.add_group_role(db, "ldap", "uretim-tum", "uretim")
    directory.add_group_role(db, "ldap", "CN=ik-ekibi, OU=groups, DC=dayanak, DC=test", "ik")
    return db


def _login(db: Database, settings: Settings, uid: str, password: str | None = None) -> auth.LoginResult:
    return auth.login(db, uid, slapd.password(uid) if password is None else password, "10.0.0.9", settings=settings)


def _as_root(server: slapd.Slapd) -> ldap3.Connection:
    return ldap3.Connection(ldap3.Server(server.url), slapd.ROOT_DN, slapd.ROOT_PASSWORD, auto_bind=True)


def test_first_sign_in_creates_the_user_with_the_mapped_role_and_no_password(mapped: Database, ldap_settings: Settings):
    assert users.get_user(mapped, "ayse") is None
    result = _login(mapped, ldap_settings, "ayse")
    assert result.user is not None and result.refusal is None
    assert result.user.roles == ("isg",) and result.user.active
    assert result.user.display_name == "Ayse Test" and result.user.email == "ayse@dayanak.test"
    with mapped.connection() as conn:
        row = conn.execute("SELECT auth_source, external_id, password_hash FROM users WHERE username = 'ayse'").fetchone()
    assert row == ("ldap", slapd.person("ayse"), None)
    again = _login(mapped, ldap_settings, "AYSE", slapd.password("ayse"))  # the same account, not a second one
    assert again.user is not None and again.user.id == result.user.id


def test_nested_groups_grant_the_role_of_the_outermost_group(mapped: Database, ldap_settings: Settings):
    """mehmet ∈ vardiya-amirleri ∈ uretim-bolumu ∈ uretim-tum; only uretim-tum is mapped."""
    result = _login(mapped, ldap_settings, "mehmet")
    assert result.user is not None and result.user.roles == ("uretim",)


def test_active_directory_member_of_and_a_dn_mapping_written_differently(mapped: Database, ldap_settings: Settings):
    result = _login(mapped, ldap_settings, "zeynep")
    assert result.user is not None and result.user.roles == ("ik",)


def test_several_mapped_groups_give_every_mapped_role_and_its_reader(mapped: Database, ldap_settings: Settings):
    """Roles as data (migration 021): the user holds every role their groups map to, and their
    set's reader exists from the sign-in on (so retrieval and statistics work for them)."""
    directory.add_group_role(mapped, "ldap", "vardiya-amirleri", "personel")
    result = _login(mapped, ldap_settings, "mehmet")
    assert result.user is not None and result.user.roles == ("personel", "uretim")
    assert result.user.reader == "personel+uretim"
    with mapped.connection() as conn:
        assert conn.execute("SELECT members FROM role_bits WHERE role = 'personel+uretim'").fetchone() == (
            ["personel", "uretim"],)
    directory.add_group_role(mapped, "ldap", "uretim-bolumu", "admin")
    again = _login(mapped, ldap_settings, "mehmet")
    assert again.user is not None and again.user.roles == ("admin", "personel", "uretim") and again.user.is_admin


def test_the_auditor_and_an_admin_made_role_can_be_mapped(mapped: Database, ldap_settings: Settings):
    """The table names roles of the registry: `denetci` and a role an admin created; a name that is
    no role is refused in Turkish."""
    from ragcore.access import create_role, delete_role

    create_role(mapped, "kalite", "Kalite")
    directory.add_group_role(mapped, "ldap", "vardiya-amirleri", "denetci")
    directory.add_group_role(mapped, "ldap", "uretim-bolumu", "kalite")
    with pytest.raises(users.UserError, match="Bilinmeyen rol: olmayan"):
        directory.add_group_role(mapped, "ldap", "uretim-bolumu", "olmayan")
    result = _login(mapped, ldap_settings, "mehmet")
    assert result.user is not None and result.user.roles == ("denetci", "kalite", "uretim")
    from ragcore.audit import can_read_audit

    assert can_read_audit(result.user)
    delete_role(mapped, "kalite")  # its mapping goes with it
    assert [m.role for m in directory.list_group_roles(mapped)
            if m.group_name in ("vardiya-amirleri", "uretim-bolumu")] == ["denetci"]


@pytest.mark.parametrize("password", ["yanlis-parola-1", "", "   "])
def test_a_wrong_or_empty_password_is_refused_and_counted(mapped: Database, ldap_settings: Settings, password: str):
    """An empty password would be an anonymous bind, which LDAP lets succeed: refused before the bind."""
    result = _login(mapped, ldap_settings, "ayse", password)
    assert result.user is None and result.refusal is None
    assert users.get_user(mapped, "ayse") is None
    assert auth.check(mapped, "ayse", "10.0.0.9").attempts == 1


def test_an_unknown_name_and_a_filter_injection_find_nobody(mapped: Database, ldap_settings: Settings):
    assert _login(mapped, ldap_settings, "yok", "bir-parola-1").user is None
    assert _login(mapped, ldap_settings, "*", slapd.password("ayse")).user is None
    assert _login(mapped, ldap_settings, "ayse)(uid=*", slapd.password("ayse")).user is None


@pytest.mark.parametrize("uid", ["kapali", "kilitli"])
def test_a_disabled_account_is_refused_with_a_turkish_reason(mapped: Database, ldap_settings: Settings, uid: str):
    """kapali: AD userAccountControl bit 2; kilitli: in LDAP_DISABLED_GROUP. Both are in the mapped isg-ekibi."""
    result = _login(mapped, ldap_settings, uid)
    assert result.user is None and result.refusal == directory.ACCOUNT_DISABLED
    assert users.get_user(mapped, uid) is None
    wrong = _login(mapped, ldap_settings, uid, "yanlis-parola-1")  # the reason is told only after the right password
    assert wrong.user is None and wrong.refusal is None


def test_no_mapped_group_means_no_access_and_no_account(mapped: Database, ldap_settings: Settings):
    result = _login(mapped, ldap_settings, "grupsuz")
    assert result.user is None and result.refusal == directory.NO_MAPPED_ROLE
    assert users.get_user(mapped, "grupsuz") is None


def test_a_local_account_keeps_its_password_and_is_never_taken_over(mapped: Database, ldap_settings: Settings):
    users.create_user(mapped, "ayse", "personel", "yerel-parola-1")
    assert _login(mapped, ldap_settings, "ayse").user is None  # the directory's password does not open a local account
    local = _login(mapped, ldap_settings, "ayse", "yerel-parola-1")
    assert local.user is not None and local.user.roles == ("personel",)
    assert directory.source_of(mapped, "ayse") == "local"


def test_an_admins_deactivation_is_not_undone_by_a_directory_sign_in(mapped: Database, ldap_settings: Settings):
    assert _login(mapped, ldap_settings, "ayse").user is not None
    users.set_active(mapped, "ayse", False)
    result = _login(mapped, ldap_settings, "ayse")
    assert result.user is None and result.refusal == directory.ADMIN_DEACTIVATED


def test_a_directory_users_password_cannot_be_set_here(mapped: Database, ldap_settings: Settings):
    assert _login(mapped, ldap_settings, "ayse").user is not None
    with pytest.raises(users.UserError, match="dizinde değiştirilir"):
        users.set_password(mapped, "ayse", "yeni-parola-12")
    assert users.authenticate(mapped, "ayse", "") is None


def _move(server: slapd.Slapd, uid: str, operation: str) -> None:
    conn = _as_root(server)
    try:
        conn.modify(slapd.group("isg-ekibi"), {"member": [(operation, [slapd.person(uid)])]})
        assert conn.result["result"] == 0, conn.result
    finally:
        conn.unbind()


def test_removed_from_the_group_loses_access_at_the_next_request(
        mapped: Database, ldap_settings: Settings, directory_server: slapd.Slapd):
    user = _login(mapped, ldap_settings, "ali").user
    assert user is not None and user.roles == ("isg",)
    signed_in_at = sessions.now().timestamp()
    token = create_token(mapped, "ali", created_by="test").secret
    assert ldap.recheck(mapped, ldap_settings, user) is not None  # still in the group: kept
    _move(directory_server, "ali", ldap3.MODIFY_DELETE)
    try:
        # within the re-check interval the last answer stands; past it, the next request asks again
        assert ldap.recheck(mapped, ldap_settings.replace(ldap_recheck_seconds=3600.0), user) == user
        assert ldap.recheck(mapped, ldap_settings, user) is None
        assert users.get_user(mapped, "ali").active is False
        assert not sessions.session_valid(sessions.epochs(mapped, "ali"), signed_in_at)
        assert authenticate_token(mapped, token, "10.0.0.9").user is None
        assert _login(mapped, ldap_settings, "ali").refusal == directory.NO_MAPPED_ROLE
    finally:
        _move(directory_server, "ali", ldap3.MODIFY_ADD)
    back = _login(mapped, ldap_settings, "ali")  # back in the group: the directory's deactivation is undone
    assert back.user is not None and back.user.active and back.user.id == user.id


def test_a_mapping_removed_by_the_admin_applies_at_the_next_request(mapped: Database, ldap_settings: Settings):
    user = _login(mapped, ldap_settings, "ayse").user
    assert user is not None
    isg = next(m for m in directory.list_group_roles(mapped, "ldap") if m.group_name == "isg-ekibi")
    directory.add_group_role(mapped, "ldap", "isg-ekibi", "personel")
    directory.delete_group_role(mapped, isg.id)
    assert ldap.recheck(mapped, ldap_settings, user).roles == ("personel",)


def test_deleted_from_the_directory_loses_access_at_the_next_request(
        mapped: Database, ldap_settings: Settings, directory_server: slapd.Slapd):
    user = _login(mapped, ldap_settings, "veli").user
    assert user is not None
    conn = _as_root(directory_server)
    try:
        conn.delete(slapd.person("veli"))
        assert conn.result["result"] == 0, conn.result
    finally:
        conn.unbind()
    assert ldap.recheck(mapped, ldap_settings, user) is None
    assert users.get_user(mapped, "veli").active is False


def test_plain_ldap_is_refused_unless_allowed(mapped: Database, ldap_settings: Settings, directory_server: slapd.Slapd):
    env = {"LDAP_URL": directory_server.url, "LDAP_USER_BASE_DN": slapd.PEOPLE}
    with pytest.raises(SettingsError, match="LDAP_ALLOW_PLAIN"):
        Settings.from_env(env, dotenv=None)
    assert Settings.from_env({**env, "LDAP_ALLOW_PLAIN": "true"}, dotenv=None).ldap_allow_plain
    assert Settings.from_env({**env, "LDAP_START_TLS": "true"}, dotenv=None).ldap_start_tls
    # settings built past validation (pydantic's unvalidated copy) are refused at the connection too,
    # before any password is sent
    result = _login(mapped, ldap_settings.model_copy(update={"ldap_allow_plain": False}), "ayse")
    assert result.user is None and result.refusal == ldap.UNAVAILABLE


def test_start_tls_and_ldaps_with_the_directorys_certificate(
        mapped: Database, ldap_settings: Settings, directory_server: slapd.Slapd):
    tls = ldap_settings.replace(ldap_allow_plain=False, ldap_start_tls=True, ldap_ca_file=directory_server.ca_file)
    assert _login(mapped, tls, "ayse").user is not None
    ldaps = ldap_settings.replace(ldap_allow_plain=False, ldap_url=directory_server.ldaps_url,
                                ldap_ca_file=directory_server.ca_file)
    assert _login(mapped, ldaps, "mehmet").user is not None
    untrusted = tls.replace(ldap_ca_file=None)  # the system CAs do not know the self-signed certificate
    assert _login(mapped, untrusted, "zeynep").refusal == ldap.UNAVAILABLE


def test_a_directory_that_does_not_answer_refuses_sign_in_and_keeps_open_sessions(
        mapped: Database, ldap_settings: Settings):
    user = _login(mapped, ldap_settings, "ayse").user
    assert user is not None
    down = ldap_settings.replace(ldap_url="ldap://127.0.0.1:9", ldap_timeout_seconds=2.0)
    assert _login(mapped, down, "ayse").refusal == ldap.UNAVAILABLE
    assert ldap.recheck(mapped, down, user) == user


def test_group_role_table_validates_roles_sources_and_duplicates(db: Database):
    with pytest.raises(users.UserError, match="Bilinmeyen rol"):
        directory.add_group_role(db, "ldap", "isg-ekibi", "patron")
    with pytest.raises(users.UserError, match="Bilinmeyen dizin"):
        directory.add_group_role(db, "ad", "isg-ekibi", "isg")
    with pytest.raises(users.UserError, match="Grup adı"):
        directory.add_group_role(db, "ldap", "x" * 513, "isg")
    directory.add_group_role(db, "ldap", "ISG-Ekibi", "isg")
    with pytest.raises(users.UserError, match="zaten"):
        directory.add_group_role(db, "ldap", "isg-ekibi", "isg")
    assert directory.mapped_roles(db, "ldap", ["isg-EKIBI"]) == ["isg"]
    assert directory.mapped_roles(db, "oidc", ["isg-ekibi"]) == []


# ----------------------------------------------------------------------------- the app


@pytest.fixture()
def ldap_app(db: Database, pg_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch,
             directory_server: slapd.Slapd) -> Iterator[None]:
    set_app_env(monkeypatch, DATABASE_URL=pg_url, DATA_DIR=str(tmp_path / "data"), ADMIN_PASSWORD="yonetici-parola-1",
                LDAP_URL=directory_server.url, LDAP_ALLOW_PLAIN="true", LDAP_USER_BASE_DN=slapd.PEOPLE,
                LDAP_GROUP_BASE_DN=slapd.GROUPS, LDAP_BIND_DN=slapd.SERVICE_DN, LDAP_BIND_PASSWORD=slapd.SERVICE_PASSWORD,
                LDAP_RECHECK_SECONDS="0")
    with db.connection() as conn:
        conn.execute("DELETE FROM login_attempts")
    reset_app(db)
    yield
    reset_app(db)


def _app_login(uid: str, password: str | None = None) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    assert escape_markdown(ldap.PLAIN_WARNING) in [w.value for w in at.warning]  # plain LDAP is said on the login page
    at.text_input(key="login_username").input(uid)
    at.text_input(key="login_password").input(password or slapd.password(uid))
    next(b for b in at.button if b.label == "Giriş yap").click()
    at.run()
    assert not at.exception, at.exception
    return at


def _signed_in(at: AppTest) -> bool:
    return bool(at.session_state["authentication_status"]) if "authentication_status" in at.session_state else False


def test_the_login_form_signs_a_directory_user_in_and_out_when_removed_from_the_group(
        ldap_app: None, mapped: Database, directory_server: slapd.Slapd):
    at = _app_login("ali")
    assert _signed_in(at) and users.get_user(mapped, "ali").roles == ("isg",)
    at.run()
    assert _signed_in(at)  # the re-check on this run found him in the group
    _move(directory_server, "ali", ldap3.MODIFY_DELETE)
    try:
        at.run()
        assert not _signed_in(at)
        assert escape_markdown(DIRECTORY_REVOKED) in [i.value for i in at.info]
    finally:
        _move(directory_server, "ali", ldap3.MODIFY_ADD)


def test_the_login_form_shows_why_a_directory_user_is_refused(ldap_app: None, mapped: Database):
    at = _app_login("grupsuz")
    assert not _signed_in(at)
    assert [e.value for e in at.error] == [escape_markdown(directory.NO_MAPPED_ROLE)]


def test_the_admin_maps_a_group_to_a_role_and_sees_each_users_source(ldap_app: None, db: Database):
    assert _app_login("ayse").error[0].value == escape_markdown(directory.NO_MAPPED_ROLE)  # nothing mapped yet
    admin = _app_login("admin", "yonetici-parola-1")
    admin.switch_page("pages/users.py").run()
    admin.selectbox(key="users_directory_source").set_value("ldap")
    admin.text_input(key="users_directory_group").input("CN=isg-ekibi,OU=groups,DC=dayanak,DC=test")
    admin.selectbox(key="users_directory_role").set_value("isg")
    next(b for b in admin.button if b.label == "Eşlemeyi ekle").click()
    admin.run()
    assert not admin.exception, admin.exception
    assert [(m.group_name, m.role, m.created_by) for m in directory.list_group_roles(db)] == [
        ("CN=isg-ekibi,OU=groups,DC=dayanak,DC=test", "isg", "admin")]

    ayse = _app_login("ayse")
    assert _signed_in(ayse) and users.get_user(db, "ayse").roles == ("isg",)
    admin.run()
    table = admin.dataframe[0].value
    assert dict(zip(table["Kullanıcı adı"], table["Giriş"], strict=True)) == {
        "admin": "Yerel parola", "ayse": "LDAP / Active Directory"}

    next(b for b in admin.button if b.label == "Eşlemeyi sil").click()
    admin.run()
    assert directory.list_group_roles(db) == []
    ayse.run()  # her next request: no mapped group any more
    assert not _signed_in(ayse)


def test_migration_022_keeps_every_existing_user_and_token_exactly(pg_url: str, tmp_path):
    """A database with local users and tokens from before 022: after it, the same rows, every user
    local with their password, and a local user without a password is still impossible."""
    from ragcore import store as dbmod

    namespace = "test_upgrade_022"
    database = dbmod.Database(pg_url, namespace)
    dbmod.drop_namespace(database, namespace)
    database.close()
    database = dbmod.Database(pg_url, namespace)
    try:
        before = tmp_path / "before_022"
        before.mkdir()
        for version, name, body in dbmod.migration_files():
            if version < 22:
                (before / f"{version:03d}_{name}.sql").write_text(body)
        dbmod.apply_migrations(database, before)
        for name, role in [("admin", "admin"), ("ayse", "isg"), ("mehmet", "uretim")]:
            users.create_user(database, name, role, f"{name}-parola-1")
        create_token(database, "ayse", created_by="admin")
        with database.connection() as conn:  # as the code before 022 deactivated
            conn.execute("UPDATE users SET active = false, sessions_valid_after = now() WHERE username = 'mehmet'")
        columns = "id, username, display_name, email, password_hash, active, created_at, updated_at"
        with database.connection() as conn:
            rows = conn.execute(f"SELECT {columns} FROM users ORDER BY id").fetchall()
            held = conn.execute("SELECT user_id, role FROM user_roles ORDER BY user_id, role").fetchall()
            token_rows = conn.execute("SELECT * FROM api_tokens ORDER BY id").fetchall()
        assert dbmod.migrate(database)[0] == "022_directory"  # and the later ones
        with database.connection() as conn:
            assert conn.execute(f"SELECT {columns} FROM users ORDER BY id").fetchall() == rows
            assert conn.execute("SELECT user_id, role FROM user_roles ORDER BY user_id, role").fetchall() == held
            assert conn.execute("SELECT * FROM api_tokens ORDER BY id").fetchall() == token_rows
            assert conn.execute("SELECT DISTINCT auth_source, external_id FROM users").fetchall() == [("local", None)]
        assert users.authenticate(database, "ayse", "ayse-parola-1") is not None
        with pytest.raises(Exception, match="users_local_has_password"), database.connection() as conn:
            conn.execute("UPDATE users SET password_hash = NULL WHERE username = 'ayse'")
    finally:
        dbmod.drop_namespace(database, namespace)


def test_the_rest_api_refuses_a_directory_users_token_once_the_directory_drops_them(
        mapped: Database, ldap_settings: Settings, directory_server: slapd.Slapd):
    """The API's token check re-asks the directory too (ragcore.api.deps.current_user)."""
    from tests.api_support import api_app
    from tests.retrieval_support import make_test_embedder

    assert _login(mapped, ldap_settings, "ali").user is not None
    secret = create_token(mapped, "ali", created_by="test").secret
    headers = {"Authorization": f"Bearer {secret}"}
    with api_app(mapped, ldap_settings, make_test_embedder()) as api:
        assert api.client.get("/v1/documents", headers=headers).status_code == 200
        _move(directory_server, "ali", ldap3.MODIFY_DELETE)
        try:
            response = api.client.get("/v1/documents", headers=headers)
        finally:
            _move(directory_server, "ali", ldap3.MODIFY_ADD)
    assert response.status_code == 401
    assert users.get_user(mapped, "ali").active is False
