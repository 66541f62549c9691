import json

import pytest

from ragcore.access import create_user, set_user_active
from ragcore.cli import main
from ragcore.core import FALLBACK_ANSWER
from tests.retrieval_support import DocSpec, insert_document, make_test_embedder

RISK = "İşveren risk değerlendirmesi yapmakla yükümlü müdür?"


@pytest.fixture()
def cli_env(db, pg_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, value in {"DATABASE_URL": pg_url, "DATA_DIR": str(tmp_path / "data"), "EMBED_BACKEND": "use",
                        "LLM_BACKEND": "extractive", "OLLAMA_BASE_URL": "http://127.0.0.1:9"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RETRIEVAL_MODE", raising=False)
    insert_document(db, make_test_embedder(), DocSpec("6331 İSG", ("isg", "personel"), (
        ("MADDE 10 – (1) İşveren, iş sağlığı ve güvenliği yönünden risk değerlendirmesi yapmak veya yaptırmakla "
         "yükümlüdür.", 7, "Madde 10"),
        ("MADDE 17 – (1) İşveren, çalışanların iş sağlığı ve güvenliği eğitimlerini almasını sağlar.", 10, "Madde 17"),
    )))
    create_user(db, "mehmet", "isg", "parola-123")
    create_user(db, "ayse", "ik", "parola-123")
    pasif = create_user(db, "pasif", "isg", "parola-123")
    set_user_active(db, pasif.username, False)
    return db


def _run(capsys, *argv: str) -> tuple[int, dict | str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    try:
        return code, json.loads(out), err
    except ValueError:
        return code, out, err


def test_search_json(cli_env, capsys) -> None:
    code, payload, _ = _run(capsys, "search", RISK, "--role", "isg", "--k", "2", "--mode", "rrf", "--json")
    assert code == 0
    assert payload["question"] == RISK and payload["role"] == "isg" and payload["mode"] == "rrf"
    first = payload["results"][0]
    assert set(first) >= {"rank", "document_id", "title", "filename", "page_start", "page_end", "article", "score",
                          "text"}
    assert (first["rank"], first["article"], first["page_start"]) == (1, "Madde 10", 7)
    assert len(payload["results"]) == 2


def test_search_respects_the_role(cli_env, capsys) -> None:
    code, payload, _ = _run(capsys, "search", RISK, "--role", "ik", "--json")
    assert code == 0 and payload["results"] == [] and payload["mode"] != "auto"


def test_search_bad_role_and_mode(cli_env, capsys) -> None:
    code, _, err = _run(capsys, "search", RISK, "--role", "patron", "--json")
    assert code == 1 and "unknown role" in err
    code, _, err = _run(capsys, "search", RISK, "--role", "isg", "--mode", "magic", "--json")
    assert code == 1 and "mod" in err


def test_ask_json(cli_env, capsys) -> None:
    """The default policy, the reader: it scores this question's passage below its answer cut, so
    the JSON carries the closest passages in its order, each with the window it marks."""
    code, payload, _ = _run(capsys, "ask", RISK, "--user", "mehmet", "--json")
    assert code == 0
    assert payload["status"] == "needs_review" and payload["generator"] == "none" and payload["llm_called"] is False
    assert payload["outcome"] == "closest" and payload["sources"][0]["article"] == "Madde 10"
    assert len(payload["nearest_sentences"]) == len(payload["sources"]) == 2
    assert "risk değerlendirmesi yapmak" in payload["nearest_sentences"][0]


def test_ask_json_under_the_rules(cli_env, capsys, monkeypatch) -> None:
    monkeypatch.setenv("ANSWER_POLICY", "rules")
    code, payload, _ = _run(capsys, "ask", RISK, "--user", "mehmet", "--json")
    assert code == 0
    assert payload["status"] == "answered" and payload["generator"] == "extractive" and payload["llm_called"] is False
    assert payload["outcome"] == "answer" and payload["nearest_sentences"] == []
    assert payload["sources"][0]["article"] == "Madde 10" and "[1]" in payload["answer"]


def test_ask_as_a_role_without_documents(cli_env, capsys) -> None:
    code, payload, _ = _run(capsys, "ask", RISK, "--user", "ayse", "--json")
    assert code == 0
    assert payload["outcome"] == "refused"
    assert payload["answer"] == FALLBACK_ANSWER and payload["sources"] == [] and payload["status"] == "needs_review"


@pytest.mark.parametrize(("user", "message"), [("kimse", "unknown user"), ("pasif", "inactive")])
def test_ask_unknown_or_inactive_user(cli_env, capsys, user: str, message: str) -> None:
    code, _, err = _run(capsys, "ask", RISK, "--user", user, "--json")
    assert code == 1 and message in err


def test_ask_empty_question(cli_env, capsys) -> None:
    code, _, err = _run(capsys, "ask", "   ", "--user", "mehmet")
    assert code == 1 and "boş" in err


def test_search_human_output(cli_env, capsys) -> None:
    code, out, _ = _run(capsys, "search", RISK, "--role", "isg")
    assert code == 0 and "[1] 6331 İSG, s. 7 (Madde 10)" in out


def test_ask_and_search_within_a_collection_or_a_document(cli_env, capsys) -> None:
    """`--collection` by name or id and `--document` restrict the question; a collection the user
    cannot read is refused like a missing one; both at once is a usage error."""
    from ragcore.documents import create_collection, set_collection_members

    other = insert_document(cli_env, make_test_embedder(), DocSpec("Risk talimati", ("isg",), (
        ("Risk değerlendirmesi her yıl yenilenir ve işveren risk değerlendirmesi yapmakla yükümlüdür.", 1, None),)))
    kept = create_collection(cli_env, "Talimatlar")
    set_collection_members(cli_env, kept.public_id, [other])
    with cli_env.connection() as conn:
        public = conn.execute("SELECT public_id::text FROM documents WHERE id = %s", (other,)).fetchone()[0]
    for flag, value in (("--collection", "talimatlar"), ("--collection", kept.public_id), ("--document", public)):
        code, payload, _ = _run(capsys, "ask", RISK, "--user", "mehmet", flag, value, "--json")
        assert code == 0 and payload["sources"] and {s["title"] for s in payload["sources"]} == {"Risk talimati"}
        code, payload, _ = _run(capsys, "search", RISK, "--role", "isg", flag, value, "--json")
        assert code == 0 and {s["title"] for s in payload["results"]} == {"Risk talimati"}
    code, _, err = _run(capsys, "ask", RISK, "--user", "ayse", "--collection", "Talimatlar", "--json")
    assert code == 1 and "Koleksiyon bulunamadı" in err
    with pytest.raises(SystemExit):
        main(["ask", RISK, "--user", "mehmet", "--collection", "x", "--document", "y"])
