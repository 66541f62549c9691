"""A real OpenLDAP server for the directory tests: slapd with a generated config and directory.

`start_slapd(root)` writes a slapd.conf (mdb backend in `root`, the core/cosine/inetorgperson
schemas, and two Active Directory attributes — `userAccountControl`, `memberOf` — under their
AD OIDs in a small auxiliary class, so AD's disabled bit and memberOf are read from a real
server too), a self-signed certificate for 127.0.0.1, loads the directory with slapadd, and
starts slapd on two free loopback ports: plain `ldap://` (StartTLS offered) and `ldaps://`.

The directory (dc=dayanak,dc=test):
* ayse    — member of `isg-ekibi` (groupOfNames);
* mehmet  — member of `vardiya-amirleri`, which is in `uretim-bolumu`, which is in `uretim-tum`:
            only `uretim-tum` is mapped, so the role comes through two levels of nesting;
* zeynep  — AD style: `memberOf: cn=ik-ekibi,…` on her entry, userAccountControl 512;
* kapali  — AD style, userAccountControl 514 (ACCOUNTDISABLE), in `isg-ekibi`;
* kilitli — in `isg-ekibi` and in `dayanak-kapali` (the configured disabled group);
* grupsuz — in no group;
* ali, veli — in `isg-ekibi`; the tests take them out of the group / the directory.
Every user's password is `<uid>-parola-1`. The service account `cn=dayanak-svc,ou=servis` may
read; anonymous clients may only bind.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SLAPD = shutil.which("slapd") or ("/usr/sbin/slapd" if Path("/usr/sbin/slapd").exists() else None)
SLAPADD = shutil.which("slapadd") or ("/usr/sbin/slapadd" if Path("/usr/sbin/slapadd").exists() else None)
SCHEMA_DIR = Path("/etc/ldap/schema")
MODULE_DIR = Path("/usr/lib/ldap")
BASE = "dc=dayanak,dc=test"
ROOT_DN = f"cn=admin,{BASE}"
ROOT_PASSWORD = "kok-parola-1"
SERVICE_DN = f"cn=dayanak-svc,ou=servis,{BASE}"
SERVICE_PASSWORD = "servis-parola-1"
PEOPLE = f"ou=people,{BASE}"
GROUPS = f"ou=groups,{BASE}"


def password(uid: str) -> str:
    return f"{uid}-parola-1"


def person(uid: str) -> str:
    return f"uid={uid},{PEOPLE}"


def group(cn: str) -> str:
    return f"cn={cn},{GROUPS}"


@dataclass
class Slapd:
    url: str
    ldaps_url: str
    ca_file: Path
    process: subprocess.Popen

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def missing() -> str | None:
    """Why slapd cannot run here (None: it can)."""
    if SLAPD is None or SLAPADD is None:
        return "slapd/slapadd not installed (Debian: apt-get install slapd ldap-utils; .ci/run does)"
    if not (SCHEMA_DIR / "inetorgperson.schema").is_file() or not (MODULE_DIR / "back_mdb.so").exists():
        return f"slapd's schemas ({SCHEMA_DIR}) or back_mdb module ({MODULE_DIR}) are missing"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_AD_SCHEMA = """
attributetype ( 1.2.840.113556.1.4.8 NAME 'userAccountControl'
    EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.2.102 NAME 'memberOf'
    EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )
objectclass ( 1.3.6.1.4.1.99999.1.1 NAME 'dayanakTestAdAccount' AUXILIARY
    MAY ( userAccountControl $ memberOf ) )
"""


def _config(root: Path) -> str:
    schemas = "\n".join(f"include {SCHEMA_DIR / name}.schema" for name in ("core", "cosine", "inetorgperson"))
    return f"""{schemas}
{_AD_SCHEMA}
pidfile {root / "slapd.pid"}
modulepath {MODULE_DIR}
moduleload back_mdb
TLSCertificateFile {root / "cert.pem"}
TLSCertificateKeyFile {root / "key.pem"}

database mdb
suffix "{BASE}"
rootdn "{ROOT_DN}"
rootpw {ROOT_PASSWORD}
directory {root / "data"}
maxsize 10485760
access to attrs=userPassword by anonymous auth by self read by * none
access to * by users read by anonymous auth by * none
"""


def _entry(dn: str, *lines: str) -> str:
    return "\n".join([f"dn: {dn}", *lines]) + "\n"


def _user(uid: str, *extra: str, ad: bool = False) -> str:
    classes = ["objectClass: inetOrgPerson", *(["objectClass: dayanakTestAdAccount"] if ad else [])]
    return _entry(person(uid), *classes, f"uid: {uid}", f"cn: {uid.title()} Test", f"sn: {uid.title()}",
                  f"displayName: {uid.title()} Test", f"mail: {uid}@dayanak.test",
                  f"userPassword: {password(uid)}", *extra)


def _group(cn: str, *members: str) -> str:
    return _entry(group(cn), "objectClass: groupOfNames", f"cn: {cn}", *(f"member: {m}" for m in members))


def directory_ldif() -> str:
    entries = [
        _entry(BASE, "objectClass: dcObject", "objectClass: organization", "dc: dayanak", "o: Dayanak Test"),
        *(_entry(f"ou={ou},{BASE}", "objectClass: organizationalUnit", f"ou: {ou}") for ou in ("people", "groups", "servis")),
        _entry(SERVICE_DN, "objectClass: person", "cn: dayanak-svc", "sn: servis", f"userPassword: {SERVICE_PASSWORD}"),
        _user("ayse"), _user("mehmet"), _user("grupsuz"), _user("kilitli"), _user("ali"), _user("veli"),
        _user("zeynep", f"memberOf: {group('ik-ekibi')}", "userAccountControl: 512", ad=True),
        _user("kapali", "userAccountControl: 514", ad=True),
        _group("isg-ekibi", person("ayse"), person("kapali"), person("kilitli"), person("ali"), person("veli")),
        _group("ik-ekibi", person("zeynep")),
        _group("vardiya-amirleri", person("mehmet")),
        _group("uretim-bolumu", group("vardiya-amirleri")),
        _group("uretim-tum", group("uretim-bolumu")),
        _group("dayanak-kapali", person("kilitli")),
    ]
    return "\n".join(entries)


def _certificate(root: Path) -> None:
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(root / "key.pem"), "-out", str(root / "cert.pem")],
        check=True, capture_output=True)


def _wait(port: int, process: subprocess.Popen, log: Path) -> None:
    for _ in range(200):
        if process.poll() is not None:
            raise RuntimeError(f"slapd exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"slapd did not listen on 127.0.0.1:{port}: {log.read_text(errors='replace')[-2000:]}")


def start_slapd(root: Path) -> Slapd:
    (root / "data").mkdir(parents=True)
    _certificate(root)
    conf = root / "slapd.conf"
    conf.write_text(_config(root))
    (root / "directory.ldif").write_text(directory_ldif())
    subprocess.run([SLAPADD, "-f", str(conf), "-l", str(root / "directory.ldif")], check=True, capture_output=True)
    port, ldaps_port = _free_port(), _free_port()
    log = root / "slapd.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [SLAPD, "-f", str(conf), "-h", f"ldap://127.0.0.1:{port}/ ldaps://127.0.0.1:{ldaps_port}/", "-d", "0"],
            stdout=out, stderr=subprocess.STDOUT)
    _wait(port, process, log)
    _wait(ldaps_port, process, log)
    return Slapd(f"ldap://127.0.0.1:{port}", f"ldaps://127.0.0.1:{ldaps_port}", root / "cert.pem", process)
