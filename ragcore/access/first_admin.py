"""The first admin: when the database has no admin yet, `admin` is created with ADMIN_PASSWORD
or a generated password (kept 0600 under DATA_DIR/secrets), and the generated one is printed
once, on the console where the operator started Dayanak.
"""

from __future__ import annotations

from ragcore.access.users import hash_password
from ragcore.core import Settings, initial_admin_password, initial_admin_password_path
from ragcore.store import Database


def ensure_initial_admin(db: Database, settings: Settings) -> str | None:
    """Create `admin` when the database has no admin yet.

    Returns the generated password when one was generated now (the caller prints it once);
    None when an admin exists or ADMIN_PASSWORD was given.
    """
    with db.connection() as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('dayanak-initial-admin'))")
        if conn.execute("SELECT 1 FROM user_roles WHERE role = 'admin' LIMIT 1").fetchone():
            return None
        password, generated = initial_admin_password(settings)
        created = conn.execute(
            "INSERT INTO users (username, display_name, password_hash) VALUES ('admin', 'Yönetici', %s) "
            "ON CONFLICT (username) DO NOTHING RETURNING id",
            (hash_password(password),),
        ).fetchone()
        if created:  # admin's reader is migration 003's; a set holding admin needs none
            conn.execute("INSERT INTO user_roles (user_id, role) VALUES (%s, 'admin')", (created[0],))
    return password if generated else None


def announce_initial_admin(password: str, settings: Settings) -> None:
    """Print the generated admin password once, on stdout, where the operator started Dayanak."""
    banner = "=" * 64
    print(
        f"\n{banner}\nDayanak: ilk yönetici hesabı oluşturuldu.\n"
        f"  kullanıcı adı: admin\n  parola:        {password}\n"
        f"  (aynı parola {initial_admin_password_path(settings)} dosyasında; giriş yaptıktan sonra değiştirin)\n"
        f"{banner}\n",
        flush=True,
    )
