"""The TQuAD protocol: counts on the real files, offset mapping, leakage rule, chunk relevance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import tquad
from eval.relevance import relevance, relevant_chunks
from tests.conftest import TQUAD_DIR

needs_tquad = pytest.mark.needs_data("tquad")


@pytest.fixture(scope="module")
def corpus() -> tquad.Corpus:
    return tquad.cached_corpus(str(TQUAD_DIR))


@needs_tquad
def test_seed_protocol_counts(corpus):
    counts = corpus.counts()
    assert counts["dev_questions"] == 892
    assert counts["dev_articles"] == 72
    assert counts["excluded_train"] == 56
    assert counts["kept_train"] == 625
    assert counts["articles"] == 697
    assert 1_350_000 < counts["characters"] < 1_450_000


@needs_tquad
def test_every_dev_answer_maps_into_its_article(corpus):
    for q in corpus.dev_questions:
        assert corpus.articles[q.article].text[q.start : q.end] == q.answer
    assert len({q.qid for q in corpus.dev_questions}) == 892


@needs_tquad
def test_article_text_is_collapsed_paragraphs_joined_by_blank_line(corpus):
    for article in corpus.articles[:50]:
        for part in article.text.split("\n\n"):
            assert part == tquad.collapse(part)


@needs_tquad
def test_train_questions_come_from_kept_articles_only(corpus):
    assert corpus.train_questions
    assert all(corpus.articles[q.article].split == "train" for q in corpus.train_questions)
    sample = tquad.sample_train_questions(corpus, 100)
    assert len(sample) == 100 and sample == tquad.sample_train_questions(corpus, 100)


def _write(folder: Path, name: str, articles: list[dict]) -> None:
    (folder / name).write_text(json.dumps({"data": articles}, ensure_ascii=False), encoding="utf-8")


def _article(title: str, contexts: list[str], qas: list[list[tuple[str, str, int]]]) -> dict:
    return {
        "title": title,
        "paragraphs": [
            {"context": c, "qas": [{"id": f"{title}-{i}-{j}", "question": q,
                                    "answers": [{"text": a, "answer_start": str(s)}] * 3}
                                   for j, (q, a, s) in enumerate(qs)]}
            for i, (c, qs) in enumerate(zip(contexts, qas, strict=True))
        ],
    }


def test_offsets_map_through_whitespace_collapse(tmp_path):
    raw = "  Buzgan   kasabası\tçok\n\n güzeldir.  "
    second = "İkinci  paragraf   1200 yılında."
    dev = [_article("A", [raw, second], [[("Nerede?", "Buzgan   kasabası", 2), ("Ne?", " güzeldir.", 25)],
                                         [("Ne zaman?", "1200", 19)]])]
    _write(tmp_path, tquad.DEV_FILE, dev)
    _write(tmp_path, tquad.TRAIN_FILE, [])
    corpus = tquad.load_corpus(tmp_path, check=False)
    text = corpus.articles[0].text
    assert text == "Buzgan kasabası çok güzeldir.\n\nİkinci paragraf 1200 yılında."
    answers = [(q.answer, text[q.start : q.end]) for q in corpus.dev_questions]
    assert answers == [("Buzgan kasabası", "Buzgan kasabası"), ("güzeldir.", "güzeldir."), ("1200", "1200")]


def test_unmappable_answer_is_rejected_by_the_count_check(tmp_path):
    dev = [_article("A", ["Bir iki üç."], [[("Soru?", "dört", 0)]])]
    _write(tmp_path, tquad.DEV_FILE, dev)
    _write(tmp_path, tquad.TRAIN_FILE, [])
    with pytest.raises(tquad.ProtocolError):
        tquad.load_corpus(tmp_path)


def test_leakage_rule_title_and_identical_paragraph(tmp_path):
    dev = [_article("Ankara", ["Ankara başkenttir."], [[("Ne?", "başkenttir", 7)]])]
    train = [
        _article("  ANKARA ", ["Başka metin."], [[]]),  # same title after strip().lower()
        _article("Başka", ["Ankara başkenttir."], [[]]),  # identical paragraph
        _article("İzmir", ["İzmir bir liman kentidir."], [[("Ne?", "liman", 10)]]),  # kept
    ]
    _write(tmp_path, tquad.DEV_FILE, dev)
    _write(tmp_path, tquad.TRAIN_FILE, train)
    corpus = tquad.load_corpus(tmp_path, check=False)
    assert corpus.excluded_train == 2 and corpus.kept_train == 1
    assert [a.key for a in corpus.articles] == ["dev/0", "train/2"]
    assert corpus.train_questions[0].answer == "liman"


def test_chunks_come_from_the_production_chunker_and_relevance_needs_the_whole_answer(tmp_path):
    sentences = [f"Bu {i}. cümle biraz uzun bir Türkçe cümledir ve dolgu içerir." for i in range(60)]
    text = " ".join(sentences)
    start = text.index("30. cümle")
    dev = [_article("A", [text], [[("Hangi?", "30. cümle", start)]])]
    _write(tmp_path, tquad.DEV_FILE, dev)
    _write(tmp_path, tquad.TRAIN_FILE, [])
    corpus = tquad.load_corpus(tmp_path, check=False)
    chunks = tquad.chunk_corpus(corpus, 500)
    assert chunks.overlap == 75 and len(chunks) > 3
    article = corpus.articles[0]
    for c in chunks.chunks:
        assert article.text[c.start : c.end] == c.text
    q = corpus.dev_questions[0]
    rel = relevant_chunks(chunks, q)
    assert rel and all(chunks.chunks[i].start <= q.start and q.end <= chunks.chunks[i].end for i in rel)
    assert relevance(chunks, [q]) == [rel]
    partial = [i for i in chunks.by_article[0] if chunks.chunks[i].start < q.end and chunks.chunks[i].end > q.start]
    assert set(rel) <= set(partial)
