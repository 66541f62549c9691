"""Who may read a watched file: the rule file of its folder, or the admin's default.

A folder of WATCH_DIR may hold a `.dayanak.toml`; it applies to the files of that folder and of
every folder below it that has none of its own (the nearest one wins, as .gitignore does):

    roles = ["isg", "uretim"]          # who may read these documents (required)
    collections = ["Talimatlar"]       # the collections they belong to (optional)

A folder without one anywhere above it takes WATCH_DEFAULT_ROLES (admin only, unless the admin
says otherwise). A rule file that cannot be read refuses its folder's files with a message that
names it: guessing wider roles from a broken file could open a document to the wrong people.
The file is TOML because Python reads it without a dependency (tomllib) and people edit it by hand.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

RULE_FILE = ".dayanak.toml"
MAX_RULE_BYTES = 16_384  # a rule file is a few lines; a larger one is a mistake, not a rule
MAX_NAMES = 50  # roles or collections one rule file may name


class RuleError(ValueError):
    """A rule file that cannot be used; the message is Turkish and names the file."""


@dataclass(frozen=True)
class FolderRule:
    """What a folder's files are stored with, and which rule file said so (None: the default)."""

    roles: tuple[str, ...]
    collections: tuple[str, ...] = ()
    source: str | None = None


def read_rule(path: Path, relative: str) -> FolderRule:
    """The rule in `path` (`relative` names it in messages)."""
    try:
        data = path.read_bytes()[: MAX_RULE_BYTES + 1]
    except OSError as exc:
        raise RuleError(f"Kural dosyası okunamadı ({relative}): {exc.strerror or exc}.") from exc
    if len(data) > MAX_RULE_BYTES:
        raise RuleError(f"Kural dosyası çok büyük ({relative}): en fazla {MAX_RULE_BYTES} bayt olabilir.")
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RuleError(f"Kural dosyası okunamadı ({relative}): TOML biçiminde değil ({exc}).") from exc
    unknown = sorted(set(parsed) - {"roles", "collections"})
    if unknown:
        raise RuleError(f"Kural dosyasında bilinmeyen alan ({relative}): {', '.join(unknown)}. "
                        "Yalnızca roles ve collections yazılabilir.")
    roles = _names(parsed.get("roles"), "roles", relative)
    if not roles:
        raise RuleError(f"Kural dosyasında rol yok ({relative}): roles = [\"isg\"] gibi en az bir rol yazın.")
    return FolderRule(roles=roles, collections=_names(parsed.get("collections", []), "collections", relative),
                      source=relative)


def _names(value: object, field: str, relative: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise RuleError(f"Kural dosyasında {field} bir ad listesi olmalı ({relative}), ör. {field} = [\"isg\"].")
    if len(value) > MAX_NAMES:
        raise RuleError(f"Kural dosyasında çok fazla ad var ({relative}): {field} en fazla {MAX_NAMES} ad tutar.")
    return tuple(dict.fromkeys(item.strip() for item in value))


class RuleBook:
    """The rules of one scan: each folder's rule file read once, the nearest one applied."""

    def __init__(self, root: Path, default_roles: tuple[str, ...]) -> None:
        self.root = root
        self.default = FolderRule(roles=default_roles)
        self._cache: dict[PurePosixPath, FolderRule | RuleError] = {}

    def rule_for(self, relative_file: str) -> FolderRule:
        """The rule of the file at `relative_file` (posix, under the root); raises RuleError."""
        found = self._folder_rule(PurePosixPath(relative_file).parent)
        if isinstance(found, RuleError):
            raise found
        return found

    def _folder_rule(self, folder: PurePosixPath) -> FolderRule | RuleError:
        if folder in self._cache:
            return self._cache[folder]
        candidate = self.root.joinpath(*folder.parts, RULE_FILE)
        if candidate.is_file() and not candidate.is_symlink():
            try:
                rule: FolderRule | RuleError = read_rule(candidate, (folder / RULE_FILE).as_posix())
            except RuleError as exc:
                rule = exc
        elif folder == PurePosixPath("."):
            rule = self.default
        else:
            rule = self._folder_rule(folder.parent)
        self._cache[folder] = rule
        return rule
