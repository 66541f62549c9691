import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from ragcore.core import Settings, format_integer
from ragcore.ops import run_checks

REPO = Path(__file__).resolve().parent.parent


def _cli(args, **env):
    full = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | env
    return subprocess.run([sys.executable, "-m", "ragcore", *args], cwd=REPO, env=full, capture_output=True,
                          text=True, timeout=120)


def test_doctor_reports_versions_and_backends(db, settings):
    report = run_checks(settings, db)
    assert report.database_ok
    assert report.postgres_version.startswith("18")
    assert tuple(int(x) for x in report.pgvector_version.split(".")[:2]) >= (0, 8)
    assert report.migrations_pending == []
    assert report.embedding_backend == "use"
    assert report.generator_backend == "extractive"
    assert report.ollama_reachable is False
    assert "not reachable" in report.as_text()
    # USE has measured defaults: weighted fusion with its tuned weight, and its calibrated threshold
    assert report.retrieval_mode == "weighted" and "measured for use-multilingual-v3" in report.retrieval_reason
    assert "dense weight 0.1" in report.retrieval_reason
    assert report.refusal_threshold == "mean >= 0.38 (calibrated for use-multilingual-v3)"


def test_doctor_names_e5_without_ollama_and_its_measured_defaults(db, settings):
    report = run_checks(settings.replace(embed_backend="auto"), db)  # the settings' Ollama port is closed
    assert (report.embedding_backend, report.embedding_model) == ("e5", "multilingual-e5-small")
    assert report.embedding_name == "e5-small-q4"
    assert "Ollama not reachable" in report.embedding_reason and "embedded e5" in report.embedding_reason
    assert report.retrieval_mode == "weighted" and "measured for e5-small-q4" in report.retrieval_reason
    assert "calibrated for e5-small-q4" in report.refusal_threshold and "not calibrated" not in report.refusal_threshold
    text = report.as_text()
    assert "embeddings:  e5 / multilingual-e5-small (auto: Ollama not reachable" in text
    assert "retrieval:   weighted (auto: measured for e5-small-q4" in text
    assert f"  lexical:   BM25, at most {settings.lexical_postings_budget:,} postings read per question" in text
    assert "exact BM25, no postings budget" in run_checks(settings.replace(lexical_postings_budget=0), db).as_text()
    overridden = run_checks(settings.replace(embed_backend="e5", retrieval_mode="lexical", refusal_threshold=0.2), db)
    assert (overridden.retrieval_mode, overridden.retrieval_reason) == ("lexical", "RETRIEVAL_MODE=lexical")
    assert overridden.refusal_threshold == "cosine >= 0.2 (REFUSAL_THRESHOLD)"  # the measured signal, the set value


def test_doctor_cli_json_and_exit_codes(pg_url, tmp_path):
    ok = _cli(["doctor", "--json"], DATABASE_URL=pg_url, DATA_DIR=str(tmp_path), OLLAMA_BASE_URL="http://127.0.0.1:9")
    assert ok.returncode == 0, ok.stderr
    payload = json.loads(ok.stdout)
    assert payload["database_ok"] and payload["postgres_version"].startswith("18")

    bad = _cli(["doctor"], DATABASE_URL=f"postgresql://postgres@/postgres?host={tmp_path}&connect_timeout=2",
               DATA_DIR=str(tmp_path), OLLAMA_BASE_URL="http://127.0.0.1:9")
    assert bad.returncode == 1
    assert "FAILED" in bad.stdout and "unreachable" in bad.stdout


def test_doctor_sees_ollama_through_the_fake_server(db, settings, fake_llm):
    report = run_checks(settings.replace(ollama_base_url=fake_llm.url, embed_backend="auto", llm_backend="auto"), db)
    assert report.ollama_reachable and "bge-m3:latest" in report.ollama_models
    assert report.embedding_backend == "ollama"
    assert report.generator_backend == "ollama"


def test_add_user_cli_reads_password_from_stdin_and_validates(pg_url, db, tmp_path):
    env = {"DATABASE_URL": pg_url, "DATA_DIR": str(tmp_path)}
    made = subprocess.run([sys.executable, "-m", "ragcore", "add-user", "mehmet", "isg", "--password-stdin", "--json"],
                          cwd=REPO, env=os.environ | env, input="guvenli-parola\n", capture_output=True, text=True,
                          timeout=120)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["roles"] == ["isg"]
    short = subprocess.run([sys.executable, "-m", "ragcore", "add-user", "ayse", "ik", "--password-stdin"],
                           cwd=REPO, env=os.environ | env, input="kisa\n", capture_output=True, text=True, timeout=120)
    assert short.returncode == 1 and "en az 8" in short.stderr
    again = subprocess.run([sys.executable, "-m", "ragcore", "add-user", "mehmet", "ik", "--password-stdin"],
                           cwd=REPO, env=os.environ | env, input="guvenli-parola\n", capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 1 and "zaten kayıtlı" in again.stderr


def test_make_run_flow_on_a_fresh_embedded_data_dir(server_root):
    """`make run` runs `init` (prints the first admin password once), then doctor sees PG 18."""
    env = {"DATA_DIR": str(server_root / "data"), "OLLAMA_BASE_URL": "http://127.0.0.1:9"}
    before = _cli(["doctor", "--json"], **env)
    assert before.returncode == 0, before.stderr
    fresh = json.loads(before.stdout)
    assert fresh["postgres_version"].startswith("18") and fresh["migrations_pending"]
    assert fresh["embedding_backend"] == "e5" and fresh["embedding_name"] == "e5-small-q4"  # no Ollama here

    first = _cli(["init"], **env)
    assert first.returncode == 0, first.stderr
    assert "ilk yönetici hesabı oluşturuldu" in first.stdout
    password = (server_root / "data" / "secrets" / "initial_admin_password").read_text().strip()
    assert password in first.stdout
    again = _cli(["init"], **env)
    assert again.returncode == 0 and password not in again.stdout

    after = json.loads(_cli(["doctor", "--json"], **env).stdout)
    assert after["migrations_pending"] == [] and after["documents"] == 0
    # the embedded server's folder is measured besides DATA_DIR
    assert [(d["place"], d["path"]) for d in after["disk"]] == [
        ("data", str(server_root / "data")), ("database", str((server_root / "data" / "pg" / "data").resolve()))]
    assert tuple(int(x) for x in after["pgvector_version"].split(".")[:2]) >= (0, 8)


def test_doctor_says_whether_the_index_has_sentence_windows_and_what_uploads_follow(db, settings):
    from ragcore import store as dbmod
    from tests.retrieval_support import make_test_embedder

    embedder = make_test_embedder()
    dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
    assert run_checks(settings, db).embedding_index == f"{embedder.name} ({embedder.dim}-d, with sentence windows)"
    line = run_checks(settings.replace(dense_windows=False), db).embedding_index
    assert line.startswith(f"{embedder.name} ({embedder.dim}-d, with sentence windows); DENSE_WINDOWS is off")
    assert "uploads follow the index until `python -m ragcore reembed`" in line


def test_doctor_reports_free_disk_space_and_warns_below_the_floor(db, settings):
    """DATA_DIR's free space is measured (the fixture's database is external: its disk cannot be,
    its size is said instead); below MIN_FREE_DISK_MB a warning says uploads are refused."""
    from ragcore.core import disk_space

    roomy = run_checks(settings.replace(min_free_disk_mb=0), db)
    assert [space.place for space in roomy.disk] == ["data"] and roomy.disk_low == []
    assert 0 < roomy.disk[0].free_bytes <= roomy.disk[0].total_bytes
    assert roomy.database_size_bytes > 0
    text = roomy.as_text()
    assert f"disk:        DATA_DIR {settings.data_dir}: " in text and "MB free of" in text
    assert "database: external server, its disk cannot be measured from here; the database holds" in text
    assert "WARNING" not in text

    floor = disk_space("data", settings.data_dir).free_mb + 1024 * 1024  # a terabyte above what is free
    full = run_checks(settings.replace(min_free_disk_mb=floor), db)
    assert full.disk_low == ["data"] and full.database_ok  # a warning, not a failure
    assert f"WARNING:   less than MIN_FREE_DISK_MB={floor} MB free in DATA_DIR: uploads are refused" in full.as_text()


def test_the_status_panel_says_the_free_space_and_the_warning_in_turkish(db, settings):
    from ragcore.core import disk_space
    from ui import health

    roomy = run_checks(settings.replace(min_free_disk_mb=0), db)
    disk = dict(health.panel_lines(roomy))["Disk"]
    assert disk.startswith("veri klasöründe ") and disk.endswith(" boş; veritabanı ayrı sunucuda, onun diski buradan "
                                                                 "ölçülemez"), disk
    assert health.disk_warning(roomy) is None
    floor = disk_space("data", settings.data_dir).free_mb + 1024 * 1024
    warning = health.disk_warning(run_checks(settings.replace(min_free_disk_mb=floor), db))
    assert warning.startswith("Diskte yer az: veri klasöründe ")
    assert f"en az {format_integer(floor)} MB gerekir, yüklemeler geri çevriliyor" in warning
    assert "MIN_FREE_DISK_MB" not in warning  # the setting's name sits under "Teknik ayrıntılar"
    technical = dict(health.technical_lines(roomy, settings))
    assert technical["Yükleme için en az boş yer"] == "MIN_FREE_DISK_MB=0"
    assert str(settings.data_dir) in technical["Disk"]
    failed = replace(roomy, database_ok=False, database_problem="disk_full", database_error="Could not start …")
    assert health.START_PROBLEMS["disk_full"].startswith("Veritabanı başlatılamadı: disk dolu.")
    assert dict(health.technical_lines(failed, settings))["Veritabanı hatası"] == "Could not start …"


SECRETS = {"OPENAI_API_KEY": "sk-doctor-0451", "COOKIE_KEY": "cookie-doctor-0452", "ADMIN_PASSWORD": "admin-doctor-0453",
           "LDAP_BIND_PASSWORD": "bind-doctor-0454", "OIDC_CLIENT_SECRET": "oidc-doctor-0455"}
OIDC = {"OIDC_ISSUER_URL": "https://sso.firma.local", "OIDC_CLIENT_ID": "dayanak",
        "OIDC_REDIRECT_URL": "https://dayanak.firma.local/oauth2callback"}
DATABASE_WITH_PASSWORD = "postgresql://dayanak:db-doctor-0456@127.0.0.1:9/dayanak"


def test_doctor_settings_lists_every_setting_and_never_a_secret(tmp_path):
    """`doctor --settings`: every declared setting with its value, default and help; a set secret
    (and a database URL's password) shows as ***, in the text and in the JSON."""
    env = {**SECRETS, **OIDC, "DATABASE_URL": DATABASE_WITH_PASSWORD, "DATA_DIR": str(tmp_path), "TOP_K": "7"}
    text = _cli(["doctor", "--settings"], **env)
    listed = _cli(["doctor", "--settings", "--json"], **env)
    assert text.returncode == 0 and listed.returncode == 0, text.stderr + listed.stderr
    for output in (text.stdout, listed.stdout):
        leaked = [value for value in [*SECRETS.values(), "db-doctor-0456"] if value in output]
        assert leaked == []
    rows = {row["name"]: row for row in json.loads(listed.stdout)["settings"]}
    assert list(rows) == [s.name for s in Settings.declarations()]
    assert {name: rows[name]["value"] for name in SECRETS} == dict.fromkeys(SECRETS, "***")
    assert rows["DATABASE_URL"]["value"] == "postgresql://dayanak:***@127.0.0.1:9/dayanak"
    assert (rows["TOP_K"]["value"], rows["TOP_K"]["default"], rows["TOP_K"]["changed"]) == ("7", "5", True)
    assert rows["CHUNK_SIZE"]["changed"] is False and rows["CHUNK_SIZE"]["help_tr"] == "hedef parça boyu (karakter)"
    for name in rows:  # every setting, with its Turkish help line under it
        assert f" {name} = " in text.stdout
    assert "* TOP_K = 7  (varsayılan: 5)\n      cevaba verilen kaynak sayısı" in text.stdout
    assert "  CHUNK_SIZE = 1000\n      hedef parça boyu (karakter)" in text.stdout
    assert "  OPENAI_BASE_URL = (boş)\n" in text.stdout and "(unset)" not in text.stdout  # Turkish throughout
    assert rows["OPENAI_BASE_URL"]["value"] == "(unset)"  # the JSON keeps the docs' words


def test_doctor_settings_table_is_the_configuration_doc_table():
    printed = _cli(["doctor", "--settings-table"])
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == Settings.docs_table()
    assert printed.stdout.strip() in (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_doctor_names_the_reader_it_loads_shipped_or_from_reader_model_dir(db, settings, tmp_path):
    """Under ANSWER_POLICY=reader, doctor says which model answers (the shipped one, or the folder
    READER_MODEL_DIR names, with its file's hash) and, when that folder holds no model, why not."""
    from ragcore.reader import MODEL_DIR, shipped_reader

    shipped = run_checks(settings.replace(answer_policy="reader"), db)
    assert shipped.reader_error is None and "4-bit ONNX (shipped, sha256 " in shipped.reader
    assert shipped_reader().onnx_sha256[:12] in shipped.reader
    own = tmp_path / "own-reader"
    shutil.copytree(MODEL_DIR, own)
    other = run_checks(settings.replace(answer_policy="reader", reader_model_dir=own), db)
    assert f"(from {own}, sha256 " in other.reader
    (own / "reader.onnx").unlink()
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = run_checks(settings.replace(answer_policy="reader", reader_model_dir=empty), db)
    assert missing.reader is None and "Okuyucu model dosyası yok" in missing.reader_error
    assert "reader FAILED" in missing.as_text()
    assert run_checks(settings.replace(answer_policy="rules"), db).reader is None  # the rules never load it
