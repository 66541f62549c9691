"""Download the sample data: TQuAD v0.1 (train, dev) and the three Turkish law PDFs.

    python scripts/download_data.py [--tquad-dir DIR] [--documents-dir DIR] [--force]

Defaults are TQUAD_DIR and DOCUMENTS_DIR (see the README). Every file is downloaded to a temporary
name, its sha256 printed and compared with the copy the project was measured on, then moved into
place. A TQuAD mismatch is an error (the evaluation lab asserts the seed's counts and would not be
comparable); a law PDF mismatch is only a warning, because the official PDFs are re-published when
a law is amended. Only the standard library is used, so this runs before `make run` installs anything.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

TQUAD_BASE = "https://raw.githubusercontent.com/TQuad/turkish-nlp-qa-dataset/master"
MEVZUAT_BASE = "https://www.mevzuat.gov.tr/MevzuatMetin"
USER_AGENT = "dayanak-download/1.0"
TIMEOUT = 60


@dataclass(frozen=True)
class DataFile:
    url: str
    name: str
    sha256: str  # the copy the project's numbers were measured on
    strict: bool  # mismatch is an error (True) or a warning (False)
    kind: str  # "tquad" | "documents"


FILES = (
    DataFile(f"{TQUAD_BASE}/train-v0.1.json", "train-v0.1.json",
             "a1033c237665c680cdf1e2071b39c9c1ca3d4287e2de460530abe519c5f70ddc", True, "tquad"),
    DataFile(f"{TQUAD_BASE}/dev-v0.1.json", "dev-v0.1.json",
             "1a42c8b00222db18331cbaa5b20d3f21c29196c46892e9602cc9a2a9b6b819b2", True, "tquad"),
    DataFile(f"{MEVZUAT_BASE}/1.5.6331.pdf", "6331-is-sagligi-ve-guvenligi-kanunu.pdf",
             "091e0ed83851cfd00b601ac2af255892f08af43a3b970277c938872c667a6e25", False, "documents"),
    DataFile(f"{MEVZUAT_BASE}/1.5.4857.pdf", "4857-is-kanunu.pdf",
             "073735dd91dc5c2b98a85aef24b340ee601b6f3463a86499b127bd4cf06ed60d", False, "documents"),
    DataFile(f"{MEVZUAT_BASE}/1.5.5510.pdf", "5510-sosyal-sigortalar-ve-genel-saglik-sigortasi-kanunu.pdf",
             "3c1ea7e2d3e6ed2777dad8bf87b0e5b294685882978fbc1388ccf61bf0d00ffe", False, "documents"),
)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(url: str, target: Path) -> None:
    """Stream `url` into `target` (a temporary file next to the final one)."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response, target.open("wb") as out:
        shutil.copyfileobj(response, out)


def check(item: DataFile, path: Path) -> bool:
    """Print the checksum; True when it matches or a mismatch is acceptable for this file."""
    actual = sha256_of(path)
    same = actual == item.sha256
    print(f"  sha256 {actual}  {'OK' if same else 'DIFFERS from ' + item.sha256}")
    if not same and not item.strict:
        print("  warning: the official PDF changed since the project measured it (amended law?); kept anyway")
    return same or not item.strict


def download(item: DataFile, folder: Path, force: bool) -> bool:
    target = folder / item.name
    print(f"{item.name}  ←  {item.url}")
    if target.exists() and not force:
        print("  already present (use --force to download again)")
        return check(item, target)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{item.name}.", dir=folder)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        fetch(item.url, tmp)
        if not check(item, tmp):
            print(f"  error: {item.name} is not the TQuAD v0.1 file the evaluation protocol expects", file=sys.stderr)
            return False
        tmp.replace(target)
        return True
    except OSError as exc:  # URLError is an OSError
        print(f"  error: download failed: {exc}", file=sys.stderr)
        return False
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Download TQuAD v0.1 and the sample law PDFs.")
    parser.add_argument("--tquad-dir", type=Path, default=Path(os.environ.get("TQUAD_DIR") or "../shared/data/tquad"))
    parser.add_argument("--documents-dir", type=Path,
                        default=Path(os.environ.get("DOCUMENTS_DIR") or "../shared/data/documents"))
    parser.add_argument("--only", choices=("tquad", "documents"), help="download only one group")
    parser.add_argument("--force", action="store_true", help="download even when the file exists")
    args = parser.parse_args(argv)
    folders = {"tquad": args.tquad_dir, "documents": args.documents_dir}
    ok = True
    for item in FILES:
        if args.only and item.kind != args.only:
            continue
        ok = download(item, folders[item.kind].expanduser(), args.force) and ok
    print("done" if ok else "finished with errors", file=sys.stderr if not ok else sys.stdout)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
