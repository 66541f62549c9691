"""The set-up files keep their promises: pinned requirements, loopback-only ports."""

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def _requirement_lines(name: str) -> list[str]:
    lines = (REPO / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "-r"))]


def test_every_requirement_is_pinned():
    for name in ("requirements.txt", "requirements-dev.txt"):
        unpinned = [line for line in _requirement_lines(name) if not re.match(r"^[A-Za-z0-9_.\[\]-]+==[\w.]+$", line)]
        assert unpinned == [], name


def test_compose_binds_every_port_to_loopback():
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    ports = [port for service in compose["services"].values() for port in service.get("ports", [])]
    assert ports and all(port.startswith("127.0.0.1:") for port in ports)


def test_compose_database_is_pgvector_and_ollama_is_optional():
    services = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    assert services["ollama"]["profiles"] == ["ollama"]


def test_ragcore_and_eval_never_import_streamlit():
    offenders = [
        str(path.relative_to(REPO))
        for folder in ("ragcore", "eval")
        for path in (REPO / folder).rglob("*.py")
        if re.search(r"^\s*(import streamlit|from streamlit)", path.read_text(encoding="utf-8"), re.M)
    ]
    assert offenders == []


# The one HTML call allowed: the uploader's Turkish texts drawn by a <style> element (Streamlit has
# no setting for them, issue 41), built from module constants and an integer, never user text.
STYLE_ONLY = {"ui/upload.py": 'st.html(f"<style>{css}</style>")'}


def test_no_page_renders_raw_html():
    """Document and user text is escaped markdown or plain text, never HTML."""
    pattern = re.compile(r"unsafe_allow_html\s*=\s*True|st\.html\(|components\.v1\.html")
    offenders = []
    for path in [REPO / "app.py", *(REPO / "ui").rglob("*.py"), *(REPO / "pages").rglob("*.py")]:
        name, text = str(path.relative_to(REPO)), path.read_text(encoding="utf-8")
        allowed = STYLE_ONLY.get(name)
        calls = [line.strip() for line in text.splitlines() if pattern.search(line)]
        if calls and calls != ([allowed] if allowed else []):
            offenders.append((name, calls))
    assert offenders == []


def test_the_uploaders_style_holds_no_markup_but_its_own():
    """The allowed <style> (STYLE_ONLY) is made of constants: whatever the upload limit, it is CSS
    with quoted Turkish texts, and nothing in it can close the element."""
    from ui.upload import _UPLOADER_CSS, DROP_TEXT, UPLOAD_BUTTON_TEXT, uploader_limits_text

    for max_mb in (1, 50, 10**9):
        css = _UPLOADER_CSS % {"button": UPLOAD_BUTTON_TEXT, "limits": uploader_limits_text(max_mb),
                               "drop": DROP_TEXT}
        assert "<" not in css, css  # no "</style>", no element of its own


def test_streamlit_config_is_local_and_private():
    import tomllib

    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    assert config["server"]["maxUploadSize"] == 50
    assert config["browser"]["gatherUsageStats"] is False


def test_compose_runs_a_separate_job_worker_on_the_app_image_and_volume():
    services = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]
    worker, app = services["worker"], services["app"]
    assert worker["command"] == ["python", "-m", "ragcore", "worker"]
    assert worker["build"] == app["build"] and worker["volumes"] == app["volumes"]  # shared DATA_DIR/uploads
    assert worker["environment"]["DATABASE_URL"] == app["environment"]["DATABASE_URL"]
    assert app["environment"]["WORKER_IN_APP"] == "false"  # the app does not process uploads itself


def test_compose_runs_the_rest_api_on_the_app_image_bound_to_loopback():
    services = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]
    api, app = services["api"], services["app"]
    assert api["command"][:4] == ["python", "-m", "ragcore", "api"]
    assert api["build"] == app["build"] and api["volumes"] == app["volumes"]
    assert api["environment"] == app["environment"]  # the same database, DATA_DIR, no worker of its own
    assert api["ports"] == ["127.0.0.1:8502:8502"]
    assert "/v1/health" in " ".join(api["healthcheck"]["test"])


def test_containers_are_healthy_only_while_the_database_answers():
    """/_stcore/health answers 200 with the database down; `doctor --quick` does not."""
    app = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]["app"]
    assert "python -m ragcore doctor --quick" in " ".join(app["healthcheck"]["test"])
    dockerfile = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    [healthcheck] = [line for line in dockerfile.splitlines() if line.startswith("HEALTHCHECK")]
    assert "CMD python -m ragcore doctor --quick &&" in healthcheck


def test_ci_runs_the_browser_test_three_times():
    script = (REPO / ".ci" / "run").read_text()
    assert "make test" in script and re.search(r"for run in 2 3; do\n(.*\n)*?.*pytest -q -m browser", script)
