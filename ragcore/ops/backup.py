"""Backup and restore: the database and the files that are not in it, as one folder.

Everything Dayanak knows is in PostgreSQL and in DATA_DIR's `uploads/` (the stored files) and
`secrets/` (the cookie key; the first admin's password). Page images and caches are rebuilt.
`python -m ragcore backup DIR` writes `DIR/dayanak-<time>/` with
- `database.dump`: pg_dump's custom format (every schema: the lab's namespaces too), made with
  the pg_dump that ships with the embedded server, which reads any PostgreSQL up to its version;
- `files.tar.gz`: uploads/ and secrets/;
- `manifest.json`: when, which migrations, the server's version, each file's sha256.
The folder is written under a temporary name and renamed when complete, so a backup that fails
(a full disk, a timeout) leaves no folder that looks whole.

`python -m ragcore restore DIR` checks the manifest's hashes, then restores the database in one
transaction (pg_restore --single-transaction: all of it or nothing) into a database without
Dayanak's tables, or over them with `--replace`, and then the files. We keep our own code here
because pg_dump/pg_restore are the tools; this only puts the two halves together and checks them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ragcore.core import PRIVATE_DIR_MODE, Settings, disk_space, format_megabytes, private_dir, sha256_file
from ragcore.store import (
    Database,
    database_url,
    migrate,
    migration_files,
    migration_status,
    pg_tool,
    redact_message,
)

DUMP = "database.dump"
FILES = "files.tar.gz"
MANIFEST = "manifest.json"
KEPT_FOLDERS = ("uploads", "secrets")  # page images and caches are rebuilt from these
FORMAT = 1


class BackupError(RuntimeError):
    """A backup or restore that could not be done; the message is Turkish and says what to do."""


@dataclass(frozen=True)
class BackupResult:
    folder: Path
    database_bytes: int
    files_bytes: int
    migrations: tuple[int, ...]

    def as_dict(self) -> dict:
        return {"folder": str(self.folder), "database_bytes": self.database_bytes, "files_bytes": self.files_bytes,
                "migrations": list(self.migrations)}


# ----------------------------------------------------------------------------- backup


def backup(settings: Settings, db: Database, target: Path) -> BackupResult:
    """Write a new backup folder under `target`; see the module's docstring."""
    target = target.expanduser().absolute()
    target.mkdir(parents=True, exist_ok=True)
    _check_room(settings, db, target)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    final = _free_name(target, f"dayanak-{stamp}")
    partial = Path(tempfile.mkdtemp(prefix=f".dayanak-{stamp}-", dir=target))
    try:
        _dump(settings, partial / DUMP)
        _pack_files(settings, partial / FILES)
        migrations = tuple(migration_status(db)[0])
        manifest = {
            "format": FORMAT,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "postgres": db.info.postgres_version,
            "migrations": list(migrations),
            "sha256": {name: sha256_file(partial / name) for name in (DUMP, FILES)},
        }
        (partial / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
        os.rename(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return BackupResult(final, (final / DUMP).stat().st_size, (final / FILES).stat().st_size, migrations)


def _free_name(target: Path, name: str) -> Path:
    """`target/name`, or `name-2`, `name-3`… when a backup of the same second is there."""
    candidate, n = target / name, 1
    while candidate.exists():
        n += 1
        candidate = target / f"{name}-{n}"
    return candidate


def _check_room(settings: Settings, db: Database, target: Path) -> None:
    """The database's size on disk and the kept folders' size must fit, with MIN_FREE_DISK_MB to
    spare: a dump is usually smaller than the database, so this errs on the safe side."""
    with db.connection() as conn:
        database_bytes = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    kept = sum(path.stat().st_size for folder in KEPT_FOLDERS for path in (settings.data_dir / folder).rglob("*")
               if path.is_file())
    needed = database_bytes + kept + settings.min_free_disk_mb * 1024 * 1024
    free = disk_space("backup", target).free_bytes
    if free < needed:
        raise BackupError(f"Yedek için yer yok: {target} klasöründe {format_megabytes(free)} boş, "
                          f"en az {format_megabytes(needed)} gerekiyor. Başka bir klasör seçin ya da yer açın.")


def _dump(settings: Settings, path: Path) -> None:
    url = database_url(settings)
    _run([str(pg_tool("pg_dump")), "--format=custom", "--no-owner", f"--file={path}", f"--dbname={url}"],
         settings, url, "Veritabanı yedeklenemedi")


def _pack_files(settings: Settings, path: Path) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for folder in KEPT_FOLDERS:
            source = settings.data_dir / folder
            if source.is_dir():
                archive.add(source, arcname=folder)
    path.chmod(0o600)  # it holds the secrets


# ----------------------------------------------------------------------------- restore


def restore(settings: Settings, db: Database, source: Path, *, replace: bool = False) -> dict:
    """Restore the backup folder `source` into the configured database and DATA_DIR."""
    manifest = read_manifest(source)
    known = {version for version, _, _ in migration_files()}
    newer = sorted(set(manifest["migrations"]) - known)
    if newer:
        raise BackupError(f"Bu yedek Dayanak'ın daha yeni bir sürümünden ({', '.join(map(str, newer))} numaralı "
                          "geçişler bu sürümde yok): önce Dayanak'ı güncelleyin, sonra geri yükleyin.")
    if not replace and _has_dayanak_tables(db):
        raise BackupError("Bu veritabanında Dayanak verisi var; geri yükleme üzerine yazar. Emin iseniz "
                          "--replace ile yeniden çalıştırın (önce bugünün yedeğini alın).")
    url = database_url(settings)
    command = [str(pg_tool("pg_restore")), "--single-transaction", "--exit-on-error", "--no-owner",
               f"--dbname={url}", str(source / DUMP)]
    if replace:
        command[1:1] = ["--clean", "--if-exists"]
    _run(command, settings, url, "Veritabanı geri yüklenemedi; veritabanı olduğu gibi kaldı")
    _unpack_files(settings, source / FILES)
    migrate(db)  # a backup of an older version is brought up to this one's schema
    return {"restored": str(source), "created_at": manifest["created_at"], "migrations": len(manifest["migrations"])}


def read_manifest(source: Path) -> dict:
    """The backup's manifest, after checking that every file it names is there, whole."""
    try:
        manifest = json.loads((source / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackupError(f"Bu klasör bir Dayanak yedeği değil ya da eksik: {source / MANIFEST} okunamadı.") from exc
    if manifest.get("format") != FORMAT:
        raise BackupError(f"Yedeğin biçimi tanınmıyor ({manifest.get('format')!r}); bu sürüm {FORMAT} okur.")
    for name, expected in manifest.get("sha256", {}).items():
        path = source / name
        if not path.is_file() or sha256_file(path) != expected:
            raise BackupError(f"Yedek bozuk ya da eksik: {name} yedeklendiği hâliyle değil. Başka bir yedek seçin.")
    return manifest


def _has_dayanak_tables(db: Database) -> bool:
    with db.connection() as conn:
        return conn.execute("SELECT to_regclass('public.schema_migrations') IS NOT NULL").fetchone()[0]


def _unpack_files(settings: Settings, archive_path: Path) -> None:
    """Extract into a temporary folder beside DATA_DIR's, then swap each kept folder in: a
    failure half-way leaves the old folders. tarfile's 'data' filter refuses links out of the
    folder, devices and absolute names."""
    if not settings.data_dir.exists():  # an external database on a new machine: no DATA_DIR yet
        private_dir(settings.data_dir)
    staging = Path(tempfile.mkdtemp(prefix=".restore-", dir=settings.data_dir))
    try:
        with tarfile.open(archive_path, "r:gz") as archive:
            archive.extractall(staging, filter="data")
        for folder in KEPT_FOLDERS:
            restored, current = staging / folder, settings.data_dir / folder
            if not restored.is_dir():
                continue
            if current.exists():
                shutil.rmtree(current)
            os.rename(restored, current)
            current.chmod(PRIVATE_DIR_MODE)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# ----------------------------------------------------------------------------- shared


def _run(command: list[str], settings: Settings, url: str, failure: str) -> None:
    """Run a PostgreSQL client program within BACKUP_SECONDS; its error, without the URL's
    password, in a BackupError."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=settings.backup_seconds, check=False)
    except subprocess.TimeoutExpired as exc:
        raise BackupError(f"{failure}: {settings.backup_seconds:g} saniyede bitmedi (BACKUP_SECONDS).") from exc
    if done.returncode != 0:
        detail = redact_message(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "", url)
        raise BackupError(f"{failure}: {detail or f'çıkış kodu {done.returncode}'}")
