"""migrate, doctor, add-user, users, set-roles, roles, add-role, delete-role."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from ragcore import store as dbmod
from ragcore.access import (
    RoleError,
    UserError,
    announce_initial_admin,
    create_role,
    create_user,
    delete_role,
    ensure_initial_admin,
    list_roles,
    list_users,
    set_roles,
)
from ragcore.cli.common import CommandError, add_json_flag, emit, open_db
from ragcore.core import Settings, shown_in_turkish
from ragcore.ops import quick_check, run_checks


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("migrate", help="apply pending database migrations")
    add_json_flag(p)
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("init", help="start the database, apply migrations, create the first admin")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("doctor", help="check database, models and servers")
    p.add_argument("--quick", action="store_true",
                   help="only check that the database answers (container health check: fast, no model probe)")
    p.add_argument("--settings", action="store_true",
                   help="list every setting: variable, current value (secrets as ***), default, help line")
    p.add_argument("--english", action="store_true", help="with --settings: the English help lines")
    p.add_argument("--settings-table", action="store_true",
                   help="print the settings table of docs/configuration.md, written from the declarations")
    add_json_flag(p)
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("backup", help="write the database and the stored files into a new folder under DIR")
    p.add_argument("target", type=Path, metavar="DIR")
    add_json_flag(p)
    p.set_defaults(func=cmd_backup)

    p = sub.add_parser("restore", help="restore a backup folder (made by `backup`) into the configured database")
    p.add_argument("source", type=Path, metavar="BACKUP_DIR")
    p.add_argument("--replace", action="store_true", help="overwrite a database that already holds Dayanak's data")
    add_json_flag(p)
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("add-user", help="create a user (password from --password-stdin or a prompt)")
    p.add_argument("username")
    p.add_argument("roles", nargs="+", help="the roles the user holds (`roles` lists them)")
    p.add_argument("--name", help="display name (default: the username)")
    p.add_argument("--email")
    p.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    add_json_flag(p)
    p.set_defaults(func=cmd_add_user)

    p = sub.add_parser("users", help="list users")
    add_json_flag(p)
    p.set_defaults(func=cmd_users)

    p = sub.add_parser("set-roles", help="give a user exactly these roles")
    p.add_argument("username")
    p.add_argument("roles", nargs="+")
    add_json_flag(p)
    p.set_defaults(func=cmd_set_roles)

    p = sub.add_parser("roles", help="list roles")
    add_json_flag(p)
    p.set_defaults(func=cmd_roles)

    p = sub.add_parser("add-role", help="create a role (name a-z, 0-9, _; a Turkish label)")
    p.add_argument("name")
    p.add_argument("label")
    p.add_argument("--description", default="")
    add_json_flag(p)
    p.set_defaults(func=cmd_add_role)

    p = sub.add_parser("delete-role", help="delete a role (users and documents lose it)")
    p.add_argument("name")
    add_json_flag(p)
    p.set_defaults(func=cmd_delete_role)


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    try:
        with dbmod.Database(dbmod.database_url(settings)) as db:
            applied = dbmod.migrate(db)
    except dbmod.DatabaseError as exc:
        raise CommandError(str(exc)) from exc
    emit({"applied": applied}, args.json, lambda: f"applied: {', '.join(applied) or 'nothing to do'}")
    return 0


def cmd_init(args: argparse.Namespace, settings: Settings) -> int:
    """What `make run` does before the app starts, so the first admin password is printed at once, and
    a missing or damaged reader model stops the start with its message instead of failing each question."""
    if settings.reads_with_reader:
        from ragcore.reader import ReaderModelError, loaded_reader

        try:
            loaded_reader(settings.reader_model_dir)
        except ReaderModelError as exc:
            raise CommandError(str(exc)) from exc
    with open_db(settings) as db:
        password = ensure_initial_admin(db, settings)
    if password:
        announce_initial_admin(password, settings)
    else:
        print("database ready; migrations applied")
    return 0


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    if args.settings_table:
        print(Settings.docs_table())
        return 0
    if args.settings:
        rows = settings.listing()
        emit({"settings": rows}, args.json, lambda: _settings_text(rows, english=args.english))
        return 0
    if args.quick:
        status = quick_check(settings)
        emit(status.as_dict(), args.json, status.as_text)
        return 0 if status.ok else 1
    report = run_checks(settings)
    emit(report.as_dict(), args.json, report.as_text)
    return 0 if report.database_ok and not report.reader_error else 1


def _settings_text(rows: list[dict], *, english: bool) -> str:
    """One setting per two lines: `NAME = value` (a * where it differs from the default), its help."""
    def shown(text: str) -> str:
        return text if english else shown_in_turkish(text)

    lines = ["Ayarlar: ortam değişkeni = şimdiki değer (* varsayılandan farklı; gizli değerler *** ile)"
             if not english else "Settings: variable = current value (* differs from the default; secrets as ***)"]
    for row in rows:
        default = f"  ({'default' if english else 'varsayılan'}: {shown(row['default'])})" if row["changed"] else ""
        lines.append(f"{'*' if row['changed'] else ' '} {row['name']} = {shown(row['value'])}{default}")
        lines.append(f"      {row['help_en'] if english else row['help_tr']}")
    return "\n".join(lines)


def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    from ragcore.ops import BackupError, backup

    with open_db(settings) as db:
        try:
            result = backup(settings, db, args.target)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
    emit(result.as_dict(), args.json, lambda: f"yedek yazıldı: {result.folder}")
    return 0


def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    from ragcore import store as dbmod
    from ragcore.ops import BackupError, restore

    # Not open_db: a restore goes into a database without Dayanak's tables, and migrating it first would fill it.
    try:
        db = dbmod.Database(dbmod.database_url(settings), "public")
    except dbmod.DatabaseError as exc:
        raise CommandError(str(exc)) from exc
    with db:
        try:
            result = restore(settings, db, args.source, replace=args.replace)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
    emit(result, args.json, lambda: f"geri yüklendi: {result['restored']} ({result['created_at']})")
    return 0


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("Password: ")
    if getpass.getpass("Repeat password: ") != first:
        raise CommandError("passwords do not match")
    return first


def cmd_add_user(args: argparse.Namespace, settings: Settings) -> int:
    password = _read_password(args.password_stdin)
    with open_db(settings) as db:
        try:
            user = create_user(db, args.username, args.roles, password, args.name, args.email)
        except UserError as exc:
            raise CommandError(str(exc)) from exc
    payload = {"username": user.username, "roles": list(user.roles), "display_name": user.display_name}
    emit(payload, args.json, lambda: f"created user {user.username} ({', '.join(user.roles)})")
    return 0


def cmd_set_roles(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            user = set_roles(db, args.username, args.roles)
        except UserError as exc:
            raise CommandError(str(exc)) from exc
    emit({"username": user.username, "roles": list(user.roles)}, args.json,
         lambda: f"{user.username}: {', '.join(user.roles)}")
    return 0


def cmd_roles(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        rows = [{"name": r.name, "label": r.label, "description": r.description, "builtin": r.builtin}
                for r in list_roles(db)]
    emit(rows, args.json, lambda: "\n".join(f"{r['name']:20} {r['label']}" for r in rows))
    return 0


def cmd_add_role(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            role = create_role(db, args.name, args.label, args.description)
        except RoleError as exc:
            raise CommandError(str(exc)) from exc
    emit({"name": role.name, "label": role.label}, args.json, lambda: f"created role {role.name} ({role.label})")
    return 0


def cmd_delete_role(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            delete_role(db, args.name)
        except RoleError as exc:
            raise CommandError(str(exc)) from exc
    emit({"deleted": args.name}, args.json, lambda: f"deleted role {args.name}")
    return 0


def cmd_users(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        rows = [
            {"username": u.username, "display_name": u.display_name, "roles": list(u.roles), "active": u.active}
            for u in list_users(db)
        ]
    emit(rows, args.json, lambda: "\n".join(f"{r['username']:20} {','.join(r['roles']):20} "
                                             f"{'active' if r['active'] else 'inactive'}" for r in rows))
    return 0
