"""Gold runs through the app's own code (eval/gold_run.py) on a tiny company: two generated PDFs
with their roles, five gold questions, the deterministic hash embedder (lexical and weighted
modes), the extractive generator.

Covered: metrics and outcomes of a run and its files; exact equality with the app asked
directly; a deliberately leaking retrieval (the role predicate removed in a throwaway copy of
the SQL) caught and counted; resuming from the per-case cache; cancelling; two concurrent runs
that do not touch each other's data; the stale-namespace sweep; the job kind.
"""

from __future__ import annotations

import csv
import json
import re
import threading
from pathlib import Path

import pytest

from eval import gold_charts, gold_report, goldstore, lab_runs
from eval import gold_run as gr
from eval.gold_run import GoldRunSpec, create_gold_run, run_gold
from ragcore import jobs
from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.answer import AnswerService, make_generator
from ragcore.core import sha256_bytes
from ragcore.documents import ingest_pdf, stored_path
from ragcore.jobs import JobCancelled
from ragcore.retrieval import hybrid as retrieval
from tests.docxs import regulation_docx
from tests.fakes import HashEmbedder
from tests.lab_support import CHUNK_SIZE, GOLD_JSONL, add_company_documents, lab_namespaces, pdf_bytes

CASES = 7  # g1 × (isg, personel), g2 × ik, g3 × personel, g4 × ik, g5 × (personel, uretim)


def hash_factory(spec: str) -> HashEmbedder:
    assert spec == "hash"
    return HashEmbedder()


@pytest.fixture()
def company(db, settings):
    add_company_documents(db, settings)
    version, _ = goldstore.import_file(db, "küçük şirket", "g.jsonl", GOLD_JSONL.encode(), created_by="admin")
    return version


def _spec(version, modes=("lexical", "weighted"), **changes) -> GoldRunSpec:
    return GoldRunSpec(version.set_id, version.version, embedders=("hash",), modes=modes, chunk_sizes=(CHUNK_SIZE,),
                       ks=(5,), **changes)


def _run(db, settings, spec, folder: Path, progress=None, **options) -> tuple[int, dict]:
    run = create_gold_run(db, settings, spec, created_by="admin", folder=folder)
    summary = run_gold(db, settings, run.id, progress, embedder_factory=hash_factory, **options)
    return run.id, summary


def _by_key(summary: dict) -> dict[str, dict]:
    return {c["key"]: c for c in summary["configurations"]}


def test_a_run_measures_the_company_through_the_app(db, settings, company, tmp_path) -> None:
    stages: list[str] = []
    run_id, summary = _run(db, settings, _spec(company), tmp_path / "run", lambda s, d, t: stages.append(s))
    assert stages[0] == "index" and "ask" in stages and stages[-1] == "report"
    assert lab_namespaces(db) == []  # every namespace of the run is gone
    assert not any((tmp_path / "run").glob("index-*"))  # and the PDF copies of its indexes
    configs = _by_key(summary)
    assert list(configs) == ["hash·lexical·300·k5", "hash·weighted·300·k5"]
    lexical = configs["hash·lexical·300·k5"]
    assert lexical["cases"] == CASES and lexical["answerable_cases"] == 5
    assert lexical["index"]["chunks"] == 7 and lexical["index"]["documents"] == 2
    assert lexical["leaks"]["count"] == 0 and lexical["agreement"] == {"checked": lexical["agreement"]["checked"],
                                                                       "mismatches": 0}
    cases = [c for c in gold_report.load_cases(tmp_path / "run") if c["configuration"] == lexical["key"]]
    assert len(cases) == CASES
    # the summary is the cases' own numbers
    answerable = [c for c in cases if c["answerable"]]
    for metric in ("recall@1", "recall@5", "mrr@10", "ndcg@10"):
        assert lexical["retrieval"][metric]["mean"] == pytest.approx(sum(c["scores"][metric] for c in answerable) / 5)
    # hand-checked: BM25 puts the article that answers first for each question
    g1 = next(c for c in cases if c["qid"] == "g1" and c["role"] == "isg")
    assert (g1["sources"][0]["filename"], g1["sources"][0]["pages"], g1["sources"][0]["relevant"]) == (
        "isg-yonetmelik.pdf", "s. 2", True)
    # relevant: the chunks on the expected page 2 (articles 3 and 4) or of the expected article (eval/gold/README.md)
    assert g1["scores"]["rank"] == 1 and g1["relevant_total"] == 2
    assert g1["answer"]["outcome"] == "correct" and "uc is gunu" in g1["answer"]["text"]
    # the role decides what is found: ik never sees the isg document, uretim sees nothing at all
    g2 = next(c for c in cases if c["qid"] == "g2")
    assert {s["filename"] for s in g2["sources"]} == {"ik-yonetmelik.pdf"}
    g5 = {c["role"]: c for c in cases if c["qid"] == "g5"}
    assert g5["uretim"]["sources"] == [] and g5["uretim"]["answer"]["outcome"] == "fallback"
    assert g5["uretim"]["gate"]["permitted_hits"] == 0
    rates = lexical["answers"]
    outcomes = [c["answer"]["outcome"] for c in answerable]
    assert rates["answerable"]["rates"]["correct"]["mean"] == pytest.approx(outcomes.count("correct") / 5)
    assert rates["unanswerable"]["n"] == 2
    op = lexical["abstention"]["operating_point"]
    assert op["threshold"] == lexical["threshold"]["value"] and 0 <= op["coverage"] <= 1
    # the files an analyst downloads
    folder = tmp_path / "run"
    assert {p.name for p in folder.iterdir()} == {"summary.json", "per_question.csv", "cases.jsonl", "report.html"}
    with (folder / "per_question.csv").open(encoding="utf-8", newline="") as table:  # answers span lines
        assert len(list(csv.reader(table))) == 1 + 2 * CASES
    card = json.loads((folder / "summary.json").read_text(encoding="utf-8"))["run"]
    assert card["data"]["gold_set"]["sha256"] == company.sha256 and len(card["data"]["documents"]) == 2
    assert set(card["code"]) == {"commit", "dirty"} and card["machine"]["cpu_count"]
    assert summary["recommendation"]["text"].startswith("Önerilen yapılandırma: ")
    run = lab_runs.get_run(db, run_id)
    assert run.attempt == 1 and run.progress["stage"] == "report"


def test_a_word_document_in_the_company_is_indexed_like_a_pdf(db, settings, company, tmp_path) -> None:
    """An upload keeps a .docx as `<sha256>.docx`: the run reads it there, not as `<sha256>.pdf`."""
    from ragcore.embed import USEEmbedder
    from ragcore.store import current_embedding_space

    data = regulation_docx()
    hashed, space = HashEmbedder(), current_embedding_space(db)  # the public index is the session's: its model
    embedder = hashed if space is None or space.same_model(hashed.name, hashed.dim) else USEEmbedder()
    ingest_pdf(db, settings, embedder, data, filename="yonetmelik.docx", roles=["isg"])
    sha = sha256_bytes(data)
    assert stored_path(settings, sha, "docx").is_file() and not stored_path(settings, sha).exists()
    _, summary = _run(db, settings, _spec(company, modes=("lexical",)), tmp_path / "run")
    index = summary["configurations"][0]["index"]
    assert index["documents"] == 3 and index["chunks"] > 7  # the two PDFs' 7 chunks and the regulation's
    assert "yonetmelik.docx" in {d["filename"] for d in summary["run"]["data"]["documents"]}


HOSTILE = 'Yemekhane <script>alert(1)</script> & <img src=x onerror="y"> saat kacta?'


def test_the_html_report_is_self_contained(db, settings, company, tmp_path) -> None:
    hostile = GOLD_JSONL.replace("Sirket yemekhanesi saat kacta acilir?", HOSTILE.replace('"', '\\"'))
    assert hostile != GOLD_JSONL
    version, _ = goldstore.import_file(db, "küçük şirket", "g.jsonl", hostile.encode(), created_by="admin")
    assert version.version == 2
    _, summary = _run(db, settings, _spec(version, modes=("lexical",)), tmp_path / "run")
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    # nothing is fetched when it is opened: no external src/href/url(), only data: images
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "url(" not in page and "@import" not in page
    images = re.findall(r'<img alt="grafik" src="data:image/svg\+xml;base64,', page)
    # two metrics, Recall@k, the reader's three-outcome curve for both groups, outcomes of both groups,
    # latency, leaks: every chart an image
    assert len(images) == len(gold_charts.all_charts(summary)) == 9
    assert summary["run"]["data"]["fingerprint"] in page and summary["run"]["code"]["commit"][:12] in page
    assert "İzin sızıntısı: 0" in page and "Öneri." in page
    # the method's names only in the report's "Teknik ayrıntılar" block, as in the app
    plain = re.sub(r'<details class="teknik">.*?</details>', "", page, flags=re.S)
    assert "<summary>Teknik ayrıntılar</summary>" in page and "bootstrap" in page
    assert not re.search(r"(?i)\b(bootstrap|holm)\b", plain)
    # the hostile question is text on the page, not markup
    assert "<script" not in page and "<img src=x" not in page
    assert "Yemekhane &lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img" in page


@pytest.mark.parametrize("mode", ["lexical", "weighted"])
def test_lab_answers_equal_the_app_asked_directly(db, settings, company, tmp_path, mode) -> None:
    """Exact: the app's own upload path and answer service, asked by hand, give the lab's results
    (its ranking is the answer path's own, `AnswerService.ranked_sources`)."""
    _run(db, settings, _spec(company, modes=(mode,)), tmp_path / "run")
    lab = {(c["qid"], c["role"]): c for c in gold_report.load_cases(tmp_path / "run")}
    assert len(lab) == CASES
    app_settings = settings.replace(chunk_size=CHUNK_SIZE, chunk_overlap=45, retrieval_mode=mode, top_k=5,
                                  data_dir=tmp_path / "app")
    app_db = dbmod.open_database(app_settings, "test_lab_app")
    try:
        embedder = HashEmbedder()
        for name, roles in (("isg-yonetmelik.pdf", ["isg", "personel"]), ("ik-yonetmelik.pdf", ["ik"])):
            ingest_pdf(app_db, app_settings, embedder, pdf_bytes(name), filename=name, roles=roles,
                       title=name.removesuffix(".pdf"))
        service = AnswerService(app_db, app_settings, embedder, make_generator(app_settings, embedder))
        people = {role: create_user(app_db, f"kisi-{role}", role, "parola-parola-1")
                  for role in ("isg", "ik", "personel", "uretim")}
        for (qid, role), case in lab.items():
            answer = service.ask(people[role], case["question"])
            assert answer.text == case["answer"]["text"], (qid, role)
            assert answer.status == case["answer"]["status"] and list(answer.cited) == case["answer"]["cited"]
            assert [(s.filename, s.page_label, s.text[:600]) for s in answer.sources] == [
                (s["filename"], s["pages"], s["text"]) for s in case["answer"]["sources"]]
            ranked = service.ranked_sources(role, case["question"], 10)
            assert [(s.filename, s.page_label, s.score) for s in ranked] == [
                (s["filename"], s["pages"], s["score"]) for s in case["sources"]]
            found = retrieval.retrieve(app_db, embedder, case["question"], role, k=10, mode=mode,
                                       windows=app_settings.dense_windows)
            assert found.evidence.as_dict() == case["gate"]["evidence"]
    finally:
        app_db.close()
        dbmod.drop_namespace(db, "test_lab_app")


def test_a_leaking_retrieval_is_caught_and_counted(db, settings, company, tmp_path, monkeypatch) -> None:
    """A throwaway copy of the retrieval SQL without its role predicate: every leak is counted."""
    for name in ("RETRIEVAL_SQL", "RETRIEVAL_WINDOWS_SQL", "LEXICAL_SQL", "THRESHOLD_SQL"):  # every statement that filters by role
        statement = getattr(retrieval, name)
        leaking = statement.replace(retrieval.ROLE_PREDICATE, "true")
        assert leaking != statement, name  # the mutation really applies
        monkeypatch.setattr(retrieval, name, leaking)
    _, summary = _run(db, settings, _spec(company), tmp_path / "run")
    cases = gold_report.load_cases(tmp_path / "run")
    for config in summary["configurations"]:
        mine = [c for c in cases if c["configuration"] == config["key"]]
        # Retrieval's own ranking is checked too; the index (7 chunks) is smaller than the depth, so
        # every chunk it ranks is among the case's recorded sources.
        readable = [{s["chunk_id"]: s["readable"] for s in c["sources"]} for c in mine]
        counted = sum(not s["readable"] for c in mine for s in c["sources"] + c["answer"]["sources"])
        counted += sum(not known[chunk] for c, known in zip(mine, readable, strict=True)
                       for chunk in c["retrieval_ranking"])
        assert config["leaks"]["count"] == counted > 0
        # ik cannot read the isg document: its questions now find it
        leakers = {(e["qid"], e["role"]) for e in config["leaks"]["examples"]}
        assert ("g2", "ik") in leakers
    weighted = _by_key(summary)["hash·weighted·300·k5"]
    # uretim reads nothing: BM25 finds no word of its question, the dense leg hands it every chunk
    assert ("g5", "uretim") in {(e["qid"], e["role"]) for e in weighted["leaks"]["examples"]}
    assert weighted["leaks"]["cases"] == CASES  # the dense leg ranks every chunk: every case leaks
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    total = sum(c["leaks"]["count"] for c in summary["configurations"])
    assert f"İzin sızıntısı: {total} kaynak" in page


def test_a_stopped_run_resumes_without_asking_again(db, settings, company, tmp_path, monkeypatch) -> None:
    asked: list[tuple[str, str]] = []
    original = gr.ask_case

    def counting(ctx, question, role):
        asked.append((ctx.configuration.key, f"{question.id}|{role}"))
        return original(ctx, question, role)

    monkeypatch.setattr(gr, "ask_case", counting)

    def stop_after_three(stage, done, total):
        if stage == "ask" and done == 3:
            raise RuntimeError("işçi durdu")

    run = create_gold_run(db, settings, _spec(company), created_by="admin", folder=tmp_path / "run")
    with pytest.raises(RuntimeError, match="işçi durdu"):
        run_gold(db, settings, run.id, stop_after_three, embedder_factory=hash_factory)
    assert lab_namespaces(db) == [] and len(lab_runs.cached_results(db, run.id)) == 3 + 1  # 3 cases + the index
    first = list(asked)
    asked.clear()
    summary = run_gold(db, settings, run.id, embedder_factory=hash_factory)
    assert len(first) == 3 and len(asked) == 2 * CASES - 3 and not set(first) & set(asked)
    assert lab_runs.get_run(db, run.id).attempt == 2
    _, fresh = _run(db, settings, _spec(company), tmp_path / "fresh")
    for a, b in zip(summary["configurations"], fresh["configurations"], strict=True):
        assert a["retrieval"] == b["retrieval"] and a["answers"] == b["answers"] and a["leaks"] == b["leaks"]
    asked.clear()
    run_gold(db, settings, run.id, embedder_factory=hash_factory)  # all cached: nothing is asked, no index built
    assert asked == [] and lab_namespaces(db) == []


def test_a_cancelled_run_leaves_no_namespace(db, settings, company, tmp_path) -> None:
    seen: list[list[str]] = []

    def cancel_while_asking(stage, done, total):
        if stage == "ask" and done == 1:
            seen.append(lab_namespaces(db))
            raise JobCancelled()

    run = create_gold_run(db, settings, _spec(company), created_by="admin", folder=tmp_path / "run")
    with pytest.raises(JobCancelled):
        run_gold(db, settings, run.id, cancel_while_asking, embedder_factory=hash_factory)
    assert seen == [[f"lab_{run.id}_1_0"]]  # one index serves both modes (a query-time setting)
    assert lab_namespaces(db) == []


def test_a_run_can_be_cancelled_while_a_document_is_embedded(db, settings, company, tmp_path) -> None:
    """Cancelling is checked on every step of the upload path (each embedding batch), not only
    between documents: a large document with a slow embedder does not hold a cancel for minutes."""
    seen: list[tuple[str, int, int]] = []
    details: list[str] = []

    def cancel_inside_the_first_document(stage, done, total):
        seen.append((stage, done, total))
        if stage == "index" and len(seen) == 3:  # the start, then two steps inside the first document
            raise JobCancelled()

    run = create_gold_run(db, settings, _spec(company), created_by="admin", folder=tmp_path / "run")
    original = lab_runs.write_progress

    def recording(db_, run_id, progress):
        details.append(progress["configuration"])
        return original(db_, run_id, progress)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lab_runs, "write_progress", recording)
        mp.setattr(gr, "PROGRESS_WRITE_S", 0.0)  # every step written: the page's detail line is checked
        with pytest.raises(JobCancelled):
            run_gold(db, settings, run.id, cancel_inside_the_first_document, embedder_factory=hash_factory)
    assert seen == [("index", 0, 2)] * 3  # no document finished
    assert any(d.startswith("hash · 300 karakter: isg-yonetmelik.pdf (") for d in details), details
    assert lab_namespaces(db) == [] and lab_runs.cached_results(db, run.id) == {}


def test_two_concurrent_runs_keep_to_their_own_data(db, settings, company, tmp_path) -> None:
    barrier = threading.Barrier(2, timeout=120)
    during: dict[str, list[str]] = {}
    results: dict[str, dict] = {}
    errors: list[BaseException] = []
    runs = {name: create_gold_run(db, settings, _spec(company), created_by=name, folder=tmp_path / name)
            for name in ("a", "b")}

    def work(name: str) -> None:
        met = False

        def progress(stage, done, total):
            nonlocal met
            if stage == "ask" and done == 1 and not met:
                met = True
                barrier.wait()  # both runs have built their namespaces and are asking
                during[name] = lab_namespaces(db)
                lab_runs.sweep_stale_namespaces(db)  # a sweep now must leave both runs alone
                barrier.wait()

        try:
            results[name] = run_gold(db, settings, runs[name].id, progress, embedder_factory=hash_factory)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(name,)) for name in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    expected = sorted(f"lab_{runs[n].id}_1_0" for n in runs)
    assert sorted(during["a"]) == expected == sorted(during["b"])
    assert lab_namespaces(db) == []
    for a, b in zip(results["a"]["configurations"], results["b"]["configurations"], strict=True):
        assert a["retrieval"] == b["retrieval"] and a["answers"] == b["answers"]
    assert lab_runs.get_run(db, runs["a"].id).progress != {} and runs["a"].id != runs["b"].id


def test_stale_namespaces_are_swept_and_active_ones_kept(db, settings, company, tmp_path, pg_url) -> None:
    def run(status: str) -> int:
        r = create_gold_run(db, settings, _spec(company), created_by="admin", folder=tmp_path / status)
        with db.connection() as conn:
            conn.execute("UPDATE public.lab_runs SET status = %s WHERE id = %s", (status, r.id))
        return r.id

    finished, fresh, abandoned, queued_job = run("succeeded"), run("running"), run("running"), run("failed")
    with db.connection() as conn:
        conn.execute("UPDATE public.lab_runs SET updated_at = now() - interval '2 hours' WHERE id = %s", (abandoned,))
    jobs.load_job_modules(settings)  # the lab registers its kinds (JOB_MODULES), as a worker loads them
    job = jobs.submit(db, "lab_gold_run", {"run_id": queued_job}, label="bekleyen")
    lab_runs.attach_job(db, queued_job, job.id)  # its job is still queued: the run is active
    names = {rid: lab_runs.namespace_name(rid, 1, 0) for rid in (finished, fresh, abandoned, queued_job)}
    for name in names.values():
        dbmod.Database(pg_url, name, max_size=1).close()  # creates the schema
    orphan = "lab_999_1_0"  # a run row that no longer exists
    dbmod.Database(pg_url, orphan, max_size=1).close()
    dropped = lab_runs.sweep_stale_namespaces(db)
    assert sorted(dropped) == sorted([names[finished], names[abandoned], orphan])
    assert sorted(lab_namespaces(db)) == sorted([names[fresh], names[queued_job]])
    for name in lab_namespaces(db):
        dbmod.drop_namespace(db, name)


def test_a_gold_run_as_a_background_job(db, settings, company, tmp_path) -> None:
    """The kind lab_gold_run: queued, run by a worker (real USE embedder), results in its folder."""
    from eval.jobs import submit_gold_run

    spec = GoldRunSpec(company.set_id, company.version, embedders=("use",), modes=("lexical", "weighted"),
                       chunk_sizes=(CHUNK_SIZE,), ks=(3,))
    run, job = submit_gold_run(db, settings, spec, created_by="admin")
    assert job.kind == "lab_gold_run" and job.arguments == {"run_id": run.id} and run.job_id == job.id
    jobs.run_worker(settings.replace(job_heartbeat_seconds=0.5), wait=False)
    done = jobs.get_job(db, job.id)
    assert done.status == "succeeded", done.error
    assert done.result["run_id"] == run.id and done.result["leaks"] == 0 and done.result["configurations"] == 2
    assert jobs.get_kind("lab_gold_run").summary(done.result) == f"çalıştırma #{run.id}: 2 yapılandırma, izin sızıntısı 0"
    finished = lab_runs.get_run(db, run.id)
    assert finished.status == "succeeded" and Path(finished.folder).name == f"{Path(finished.folder).name}"
    summary = gold_report.load_summary(Path(finished.folder))
    assert summary["run"]["embedders"]["use"]["name"] == "use-multilingual-v3"
    assert [c["k"] for c in summary["configurations"]] == [3, 3]
    assert lab_namespaces(db) == []


def test_the_quote_behind_the_gate_is_checked_with_the_gated_retrieval() -> None:
    from ragcore.retrieval import QuoteSignals
    from tests.abstention_support import gate_model, with_quote_cut

    model = with_quote_cut(gate_model(0.9, 0.2), 0.5)
    signals = {"cosine": 0.85, "coverage": 0.5, "dense_margin": 0.01, "lexical_ratio": 0.8, "legs_agree": 1.0}
    gated = {"probability": 0.6, "signals": signals}
    behind = {"quote_signals": {"best": 0.9, "second": 0.3, "source": 2}}
    assert gr._quote_probability(model, gated, behind) == model.quote_probability(0.6, signals,
                                                                                  QuoteSignals(0.9, 0.3, 2))
    assert gr._quote_probability(None, gated, behind) is None  # no model: nothing to check with
    assert gr._quote_probability(model, {"probability": None, "signals": None}, behind) is None  # nothing permitted
    assert gr._quote_probability(model, gated, {"quote_signals": None}) is None  # a language model's answer


def test_a_reader_runs_card_names_its_model_and_how_many_candidates_it_read() -> None:
    from ragcore.core import Settings

    settings = Settings.from_env(dotenv=None).replace(reader_candidates=6)
    described = gold_report.reader_description(settings)
    assert described["candidates"] == 6 and described["model"] == "shipped"
    assert len(described["onnx_sha256"]) == 64
