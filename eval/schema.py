"""The lab's own tables (gold sets, lab runs and their result cache): numbered migrations in
eval/migrations/, applied with the store's runner and recorded in `lab_schema_migrations`.

Call `migrate_lab` after the core migrations, wherever the lab's tables are about to be used: the
lab's CLI and job functions, the app's database resource, the tests' database.
"""

from __future__ import annotations

from importlib import resources

from ragcore.core import Settings
from ragcore.store import Database, apply_migrations, open_database

LAB_SQL = resources.files("eval") / "migrations"


def migrate_lab(db: Database) -> list[str]:
    """Apply the lab's pending migrations; return their names."""
    return apply_migrations(db, LAB_SQL, table="lab_schema_migrations", lock_key="dayanak-lab-migrate")


def open_lab_database(settings: Settings) -> Database:
    """`open_database` (core migrations included) with the lab's migrations applied too."""
    db = open_database(settings)
    try:
        migrate_lab(db)
    except BaseException:
        db.close()
        raise
    return db
