"""The extractive answerer: sentence units, what a question asks for, features, the measured model
file, selection (≤ 2 sentences, ≤ 400 characters, no bare heading) and, on the real laws, that
the quoted sentence holds the fact asked for."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ragcore.answer import (
    ELLIPSIS,
    EXTRACTIVE_MODEL_FILE,
    EXTRACTIVE_NOTICE,
    FEATURES,
    KIND_ANSWER,
    LEXICAL_SENTENCE_MODEL,
    MAX_SENTENCE_CHARS,
    ExtractiveGenerator,
    ExtractiveModelError,
    Passage,
    SentenceModel,
    asked,
    candidates,
    clip,
    facts,
    feature_matrix,
    finalize,
    lead_line,
    load_model_file,
    renumber,
    select_passages,
    split_sentences,
)
from ragcore.answer import extractive as ex
from ragcore.core import FALLBACK_ANSWER, Source
from tests.retrieval_support import make_test_embedder

RISK = (
    "Risk değerlendirmesi, kontrol, ölçüm ve araştırma\nMADDE 10 – (1) İşveren, iş sağlığı ve güvenliği "
    "yönünden risk değerlendirmesi yapmak veya yaptırmakla yükümlüdür. Risk değerlendirmesi yapılırken "
    "çalışanların durumu dikkate alınır.\n(2) Yapılan çalışmalar kayıt altına alınır."
)
# Law 4857 Article 53 as the PDF gives it (line breaks included).
LEAVE = (
    "Yıllık ücretli izin hakkı ve izin süreleri\nMadde 53 - İşyerinde işe başladığı günden itibaren, deneme "
    "süresi de içinde olmak\nüzere, en az bir yıl çalışmış olan işçilere yıllık ücretli izin verilir.\n"
    "İşçilere verilecek yıllık ücretli izin süresi, hizmet süresi;\n"
    "a) Bir yıldan beş yıla kadar (beş yıl dahil) olanlara ondört günden,\n"
    "b) Beş yıldan fazla onbeş yıldan az olanlara yirmi günden,\n"
    "c) Onbeş yıl (dahil) ve daha fazla olanlara yirmialtı günden,\nAz olamaz. "
    "(Ek cümle: 10/9/2014-6552/5 md.) Yer altı işlerinde çalışan işçilerin\nyıllık ücretli izin süreleri "
    "dörder gün arttırılarak uygulanır."
)
SOURCES = [
    Source(1, 11, 1, "6331 İSG Kanunu", "6331.pdf", 7, 7, "Madde 10", 0.9, RISK),
    Source(2, 12, 1, "6331 İSG Kanunu", "6331.pdf", 8, 8, "Madde 11",
           0.5, "İşveren acil durum planlarını hazırlar ve gerekli tatbikatları yaptırır."),
]
QUESTION = "İşveren risk değerlendirmesi yapmakla yükümlü müdür?"


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


# ----------------------------------------------------------------------------- sentence units


def test_split_sentences_drops_fragments() -> None:
    assert split_sentences("Kısa. Bu cümle yeterince uzun olduğu için kalır. (2)") == [
        "Bu cümle yeterince uzun olduğu için kalır."
    ]


def test_an_article_heading_is_cut_off_and_never_a_unit() -> None:
    units = split_sentences(RISK)
    assert units[0].startswith("(1) İşveren, iş sağlığı") and units[0].endswith("yükümlüdür.")
    assert not any("MADDE 10" in u for u in units)
    assert "(2) Yapılan çalışmalar kayıt altına alınır." in units


def test_a_legal_list_stays_one_sentence_with_its_lead_in() -> None:
    units = split_sentences(LEAVE)
    listed = next(u for u in units if "ondört" in u)
    assert listed.startswith("İşçilere verilecek yıllık ücretli izin süresi, hizmet süresi; a) Bir yıldan")
    assert "yirmi günden" in listed and "yirmialtı günden" in listed and listed.endswith("Az olamaz.")
    assert "(Ek cümle: 10/9/2014-6552/5 md.)" not in units  # an amendment note alone is no answer
    assert all(len(u) <= MAX_SENTENCE_CHARS for u in units)


def test_initials_and_titles_do_not_end_a_sentence() -> None:
    text = "Roma’ya satılıp Papa X. Leo tarafından vaftiz edildi. Muhammed b. Musa el-Harizmi bir matematikçidir."
    assert split_sentences(text) == ["Roma’ya satılıp Papa X. Leo tarafından vaftiz edildi.",
                                     "Muhammed b. Musa el-Harizmi bir matematikçidir."]


def test_candidates_keep_each_text_once_with_its_first_source() -> None:
    repeated = [SOURCES[0], Source(2, 13, 1, "t", "t.pdf", 7, 7, None, 0.4, RISK)]
    cands = candidates(repeated)
    assert [c.number for c in cands] == [1] * len(split_sentences(RISK))
    assert [c.position for c in cands] == list(range(len(cands)))


# ----------------------------------------------------------------------------- what is asked, what is there


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("İş kazası kaç gün içinde bildirilir?", {"amount": True, "unit": "gün"}),
        ("Yıllık izin ne kadar sürer?", {"amount": True}),
        ("Osmanlı Devleti hangi yılda kuruldu?", {"date": True, "which": "yıld"}),
        ("Kaç yılında öldü?", {"date": True, "amount": False}),
        ("İstanbul ne zaman fethedildi?", {"date": True}),
        ("Kanunu kim çıkardı?", {"person": True}),
        ("Kimya dersini seviyor mu?", {"person": False}),  # "kim" inside a word is not a question word
        ("Mimar Sinan nerede doğdu?", {"place": True}),
        ("Hangi şehirde yaşadı?", {"place": True, "which": "şehi"}),
        # typed without Turkish letters, the question words and the unit are read as if typed with them
        ("is kazasi kac gun icinde bildirilir", {"amount": True, "unit": "gün"}),
        ("yillik izin kac haftadir", {"amount": True, "unit": "haf"}),
        ("kac yilinda oldu", {"date": True, "amount": False}),
        ("zam yuzde kac", {"amount": True}),
        ("KIM imzalar", {"person": True}),
        ("Hangi kitapta yazıyor?", {"place": False}),  # "kitap" is no "kıta" ("kita" folded)
    ],
)
def test_what_a_question_asks_for(question: str, expected: dict) -> None:
    got = asked(question)
    for field, value in expected.items():
        assert getattr(got, field) == value, (question, got)


def test_numbers_in_digits_and_words_with_their_units() -> None:
    law = facts("a) İş kazalarını kazadan sonraki üç iş günü içinde.")
    assert law.numbers == {"üç"} and "gün" in law.units
    listed = facts("olanlara ondört günden, yirmialtı günden, dörder gün")
    assert {"ondört", "yirmialtı", "dörder"} <= listed.numbers
    assert facts("en geç on gün içinde bildirir").numbers == {"on"}  # "on" before a unit is ten
    assert not facts("onlar bir bina yüzünden altında kaldı").numbers  # … otherwise a common word


def test_dates_names_and_places() -> None:
    f = facts("Fatih 1453 yılında İstanbul'u aldı ve Mart ayında Edirne'de öldü.")
    assert {"1453", "mart"} <= f.dates
    assert {"istan", "edirn"} <= f.names and "fatih" not in f.names  # the first word is not a name
    assert "edirn" in f.places
    assert facts("İşveren, Sosyal Güvenlik Kurumuna bildirir.").institutions


def test_features_are_named_and_scale_free() -> None:
    cands = candidates(SOURCES)
    cosine = np.linspace(0.2, 0.6, len(cands))
    m = feature_matrix(QUESTION, cands, cosine)
    assert m.shape == (len(cands), len(FEATURES))
    squeezed = feature_matrix(QUESTION, cands, 0.8 + 0.1 * cosine)  # another model's narrower scale
    assert np.allclose(m, squeezed)
    lexical = feature_matrix(QUESTION, cands, None)
    assert not lexical[:, FEATURES.index("cosine_relative")].any()
    rank = m[:, FEATURES.index("source_rank")]
    assert rank.tolist() == [1.0 / c.number for c in cands]
    by_cosine = m[:, FEATURES.index("cosine_rank")]
    assert by_cosine[-1] == 1.0 and by_cosine[-2] == 0.5 and by_cosine.min() == 1.0 / len(cands)


def test_source_overlap_reads_the_whole_chunk_of_each_candidate() -> None:
    """An everyday question may share its words with the article rather than with the sentence."""
    first = Source(1, 1, 1, "4857", "4857.pdf", 20, 20, "Madde 53", 0.9,
                   "Yıllık ücretli izin hakkı. İşçilere verilecek izin süresi on dört günden az olamaz.")
    second = Source(2, 2, 1, "4857", "4857.pdf", 21, 21, "Madde 54", 0.8,
                    "Fazla çalışma ücreti. Her bir saat fazla çalışma için verilecek ücret yüzde elli yükseltilir.")
    cands = candidates([first, second])
    texts = [first.text, second.text]
    m = feature_matrix("Yıllık izin hakkım kaç gün?", cands, None, texts)
    column = m[:, FEATURES.index("source_overlap")]
    first_units = [i for i, c in enumerate(cands) if c.number == 1]
    second_units = [i for i, c in enumerate(cands) if c.number == 2]
    assert min(column[first_units]) > max(column[second_units])
    assert not feature_matrix("Yıllık izin hakkım kaç gün?", cands, None)[:, FEATURES.index("source_overlap")].any()


def test_question_type_features_fire_on_the_answering_sentence() -> None:
    source = Source(1, 1, 1, "4857", "4857.pdf", 20, 20, "Madde 53", 0.9, LEAVE)
    cands = candidates([source])
    m = feature_matrix("Yıllık izin kaç gündür?", cands, None)
    fired = {cands[i].text[:30] for i in np.flatnonzero(m[:, FEATURES.index("asks_unit_has_number_unit")])}
    assert any(text.startswith("İşçilere verilecek") for text in fired)


# ----------------------------------------------------------------------------- the model file


def test_the_shipped_model_file_describes_its_training() -> None:
    payload = json.loads(EXTRACTIVE_MODEL_FILE.read_text(encoding="utf-8"))
    assert payload["produced_by"] == "scripts/train_extractive.py"
    assert payload["data"]["file"] == "train-v0.1.json" and len(payload["data"]["sha256"]) == 64
    models = load_model_file().models
    assert LEXICAL_SENTENCE_MODEL in models and payload["fallback_model"] in models
    for name, model in models.items():
        entry = payload["models"][name]
        assert list(model.features) == entry["features"] and len(entry["coefficients"]) == len(model.features)
        assert entry["holdout"]["questions"] > 0 and 0 < entry["holdout"]["top1"] <= 1


def test_a_missing_or_broken_model_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ExtractiveModelError, match="fit extractive"):
        load_model_file(tmp_path / "missing.json")
    good = json.loads(EXTRACTIVE_MODEL_FILE.read_text(encoding="utf-8"))
    broken = tmp_path / "broken.json"
    entry = good["models"][LEXICAL_SENTENCE_MODEL]
    for change in ({"features": [*entry["features"][:-1], "no_such_feature"]},
                   {"coefficients": entry["coefficients"][:-1]},
                   {"selection": {}}):
        payload = {**good, "models": {**good["models"], LEXICAL_SENTENCE_MODEL: {**entry, **change}}}
        broken.write_text(json.dumps(payload), encoding="utf-8")
        with pytest.raises(ExtractiveModelError):
            load_model_file(broken)
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(ExtractiveModelError, match="JSON"):
        load_model_file(broken)


def test_which_model_serves_which_embedder(embedder) -> None:
    stored = load_model_file()

    class Unknown:
        name = "ollama:some-model"

    assert stored.for_embedder(None).name == LEXICAL_SENTENCE_MODEL
    assert stored.for_embedder(Unknown()).name == stored.fallback
    if embedder.name in stored.models:
        assert stored.for_embedder(embedder).name == embedder.name


class RecordingEmbedder:
    """Embeds the question as a query and sentences as passages, and records which was which."""

    kind, model, name, dim = "fake", "recording", "recording", 2

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.passages: list[str] = []

    def embed_queries(self, texts):
        self.queries += list(texts)
        return np.array([[1.0, 0.0]] * len(texts), dtype=np.float32)

    def embed_passages(self, texts):
        self.passages += list(texts)
        return np.array([[1.0, 0.0] if "acil" in t else [0.0, 1.0] for t in texts], dtype=np.float32)


def test_a_model_with_embedding_features_embeds_queries_and_passages_apart() -> None:
    model = SentenceModel("recording", ("cosine_relative",), np.array([5.0]), -2.0, 0.5)
    embedder = RecordingEmbedder()
    ranked = ex.rank_passages(QUESTION, SOURCES, embedder, model)
    assert ranked[0].number == 2 and "acil durum" in ranked[0].text
    assert embedder.queries == [QUESTION] and embedder.passages == [c.text for c in candidates(SOURCES)]
    with pytest.raises(ExtractiveModelError, match="needs an embedder"):
        ex.rank_passages(QUESTION, SOURCES, None, model)
    lexical = SentenceModel("lexical", ("overlap",), np.array([5.0]), -2.0, 0.5)
    quiet = RecordingEmbedder()
    ex.rank_passages(QUESTION, SOURCES, quiet, lexical)
    assert quiet.queries == quiet.passages == []  # a lexical model never embeds


# ----------------------------------------------------------------------------- selection


def _p(number: int, text: str, score: float) -> Passage:
    return Passage(number, text, score)


def test_at_most_two_sentences_and_the_second_only_when_comparable() -> None:
    ranked = [_p(1, "Birinci cümle burada.", 0.8), _p(2, "İkinci cümle burada.", 0.6), _p(1, "Üçüncü.", 0.59)]
    assert len(select_passages(ranked, ratio=0.5)) == 2
    assert len(select_passages(ranked, ratio=0.9)) == 1
    assert select_passages([], ratio=0.5) == []


def test_the_quote_stays_within_400_characters() -> None:
    first = "Birinci uzun cümle " * 13 + "biter."  # 253 characters
    second = "ikinci uzun cümle sürüyor " * 10 + "biter."
    chosen = select_passages([_p(1, first, 0.9), _p(2, second, 0.9)], "ikinci cümle", ratio=0.5)
    assert chosen[0].text == first and chosen[1].text.endswith(ELLIPSIS)  # clipped to the room left
    assert chosen[1].text.rstrip(ELLIPSIS) in second and sum(len(p.text) for p in chosen) <= MAX_SENTENCE_CHARS
    longer = "Uzun " * 66 + "son."  # 334 characters: too little room for a clipped second sentence
    chosen = select_passages([_p(1, longer, 0.9), _p(2, second, 0.9), _p(3, "Kısa bir cümle.", 0.8)], ratio=0.5)
    assert [p.text for p in chosen] == [longer, "Kısa bir cümle."]


def test_an_over_long_sentence_is_clipped_verbatim_around_the_question_words() -> None:
    sentence = "Giriş kelimesi " * 40 + "iş kazası üç iş günü içinde Kuruma bildirilir " + "ve sonra " * 40 + "bitti."
    clipped = clip(sentence, "İş kazası kaç gün içinde bildirilir?")
    assert len(clipped) <= MAX_SENTENCE_CHARS and clipped.startswith(ELLIPSIS) and clipped.endswith(ELLIPSIS)
    assert "üç iş günü içinde" in clipped and clipped.strip(ELLIPSIS) in sentence


# ----------------------------------------------------------------------------- the generator


def test_extractive_quotes_the_answering_sentence_with_its_marker(embedder) -> None:
    text = "".join(ExtractiveGenerator(embedder).stream([], SOURCES, QUESTION))
    assert EXTRACTIVE_NOTICE not in text and "Alıntı modu" not in text
    lead, blank, *quoted = text.splitlines()
    assert lead.startswith("6331 İSG Kanunu, Madde 10") and lead.endswith(" göre:") and blank == "", text
    assert 1 <= len(quoted) <= 2 and all(line.startswith("> “") for line in quoted)
    assert "yaptırmakla yükümlüdür" in quoted[0] and quoted[0].endswith("[1]")
    assert sum(len(line) for line in quoted) <= MAX_SENTENCE_CHARS + 20  # 400 characters of text plus "> “” [n]"
    result = finalize(text, SOURCES)
    assert result.kind == KIND_ANSWER and result.cited[0] == 1


def test_extractive_without_embedder_and_without_sources() -> None:
    text = "".join(ExtractiveGenerator(None).stream([], SOURCES, "acil durum planları kim hazırlar?"))
    assert "acil durum planlarını" in text and "[2]" in text
    assert "".join(ExtractiveGenerator(None).stream([], [], "x")) == FALLBACK_ANSWER


# ----------------------------------------------------------------------------- the real laws


@pytest.fixture(scope="module")
def laws(session_db, embedder, tmp_path_factory, pg_url):
    """Laws 6331 and 4857 through the real ingest; an employee (personel) may read both."""
    from ragcore.access import users
    from ragcore.core import Settings
    from tests.conftest import LAW_4857, LAW_6331
    from tests.retrieval_support import clean, ingest_law

    for path in (LAW_6331, LAW_4857):
        assert path.is_file(), f"{path} is missing: the real-law checks need ../shared/data/documents"
    clean(session_db)
    settings = Settings(database_url=pg_url, data_dir=tmp_path_factory.mktemp("extractive") / "data",
                        embed_backend="use", llm_backend="extractive", ollama_base_url="http://127.0.0.1:9")
    ingest_law(session_db, settings, embedder, LAW_6331, ["isg", "personel"])
    ingest_law(session_db, settings, embedder, LAW_4857, ["ik", "personel"])
    users.create_user(session_db, "zeynep", "personel", "parola-123", "Zeynep")
    return session_db, settings.replace(answer_policy="rules")  # the quoter answers under the rules


def _ask(laws, embedder, question: str):
    from ragcore.access import users
    from ragcore.answer import AnswerService

    db, settings = laws
    return AnswerService(db, settings, embedder, ExtractiveGenerator(embedder)).ask(users.get_user(db, "zeynep"),
                                                                                   question)


def _quoted(answer) -> list[tuple[str, Source]]:
    lead, blank, *lines = answer.text.splitlines()
    assert 1 <= len(lines) <= ex.MAX_SENTENCES and all(line.startswith("> “") for line in lines), answer.text
    out = []
    for line in lines:
        text, _, marker = line[3:].rpartition("” [")
        out.append((text, answer.sources[int(marker.rstrip("]")) - 1]))
    # The lead names the quotes' documents and articles in quoting order; the first quote is [1].
    assert blank == "" and lead == lead_line([source for _, source in out]), answer.text
    assert lines[0].endswith("[1]")
    assert sum(len(text) for text, _ in out) <= MAX_SENTENCE_CHARS
    assert not any(text.rstrip(" –-").endswith(("MADDE 14", "Madde 53")) for text, _ in out)  # no bare heading
    return out


def test_work_accident_notice_period_quotes_three_working_days(laws, embedder) -> None:
    answer = _ask(laws, embedder, "İş kazası kaç gün içinde bildirilir?")
    quoted = _quoted(answer)
    holding = [(text, src) for text, src in quoted if "üç iş günü içinde" in text]
    assert holding, answer.text
    assert any(src.filename.startswith("6331") and src.article == "Madde 14" for _, src in holding)


def test_annual_leave_quotes_a_duration_of_article_53(laws, embedder) -> None:
    """"Yıllık izin kaç gündür?" is never refused, Madde 53 (the durations) is among the role's ten
    best chunks, and a context holding it gets the sentence with one of its durations quoted.

    Why the context is not production retrieval's: with USE and the heading field (migration 016),
    the continuation chunks of Madde 54–58 carry "Yıllık ücretli izin …" headings and push Madde 53
    to tenth place, out of the five the app answers from, so the app shows the closest passages
    (pinned below: a known ranking miss, measured in the lab). The context is built here from
    production retrieval's own ten — Madde 53's chunk first, then the others in their order — so
    that what this test checks is the quoter's choice within a context that holds the answer."""
    from ragcore.core.models import OUTCOME_CLOSEST
    from ragcore.retrieval import retrieve

    db, settings = laws
    question = "Yıllık izin kaç gündür?"
    assert _ask(laws, embedder, question).outcome == OUTCOME_CLOSEST  # never "not in your documents"
    retrieval = retrieve(db, embedder, question, "personel", k=10, mode="weighted", windows=settings.dense_windows)
    article_53 = [s for s in retrieval.sources if s.filename.startswith("4857") and s.article == "Madde 53"]
    assert article_53, [s.article for s in retrieval.sources]
    context = (article_53 + [s for s in retrieval.sources if s not in article_53])[:settings.top_k]
    text = "".join(ExtractiveGenerator(embedder).stream([], context, question, query_vector=retrieval.query_vector))
    renumbered, _, sources = renumber(text, finalize(text, context).cited, context)
    answer = SimpleNamespace(text=renumbered, sources=sources)  # what the service records when it answers
    quoted = _quoted(answer)
    # A duration of Madde 53 from Madde 53 itself (the refitted quoter may pick the article's
    # sentence for young and older workers, "yirmi günden az olamaz", over the 14/20/26 list).
    holding = [(text, src) for text, src in quoted if any(d in text for d in ("ondört", "yirmi günden", "yirmialtı"))]
    assert any(src.filename.startswith("4857") and src.article == "Madde 53" for _, src in holding), answer.text


def test_the_quote_choice_reports_its_best_sentences_own_signals(embedder) -> None:
    """The quote check reads these: the quoter's probability is relative to the context, the
    sentence's cosine, words and kind of fact are not."""
    choice = ex.choose_quote("Acil durum planlarını kim hazırlar?", SOURCES, embedder)
    signals = choice.signals()
    best = choice.ranked[0]
    assert signals.best == best.score and signals.source == best.number
    query = embedder.embed_queries(["Acil durum planlarını kim hazırlar?"])[0]
    assert signals.sentence_cosine == pytest.approx(float(embedder.embed_passages([best.text])[0] @ query), abs=1e-5)
    assert 0.0 < signals.sentence_overlap4 <= 1.0 and signals.asks_type == 1.0  # "kim": a person is asked
    unrelated = ex.choose_quote("Bugün hava nasıl olacak?", SOURCES, embedder).signals()
    assert unrelated.asks_type == 0.0 and unrelated.sentence_overlap4 == 0.0 and unrelated.type_match == 0.0
    assert ex.choose_quote("x", [], embedder).signals() == ex.QuoteSignals(0.0, 0.0, 0)  # an empty context


def test_the_quote_choice_names_each_sources_nearest_sentence() -> None:
    """The closest outcome marks, in each passage it shows, the unit the quoter ranks highest there."""
    ranked = (ex.Passage(2, "İkinci kaynağın en iyi cümlesi.", 0.9), ex.Passage(1, "Birinci kaynağın cümlesi.", 0.5),
              ex.Passage(2, "İkinci kaynağın öteki cümlesi.", 0.4), ex.Passage(1, "Birincinin son cümlesi.", 0.1))
    choice = ex.QuoteChoice(ranked, ranked[:1])
    assert choice.nearest(3) == ("Birinci kaynağın cümlesi.", "İkinci kaynağın en iyi cümlesi.", "")
    assert choice.nearest(1) == ("Birinci kaynağın cümlesi.",) and ex.QuoteChoice((), ()).nearest(2) == ("", "")
