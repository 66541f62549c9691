"""Generators against the local fake Ollama/OpenAI server: streaming, errors, timeouts,
missing models, backend choice; and what happens to generated text afterwards.
(The extractive quoter has its own tests: tests/test_extractive.py.)"""

from __future__ import annotations

import threading

import pytest

from ragcore.answer import (
    KIND_ANSWER,
    KIND_ECHO,
    KIND_REFUSAL,
    SYSTEM_PROMPT,
    ExtractiveGenerator,
    GeneratorError,
    OllamaGenerator,
    OpenAIGenerator,
    build_messages,
    choose_generator_backend,
    finalize,
    make_generator,
    parse_citations,
)
from ragcore.core import FALLBACK_ANSWER, OllamaStatus, Settings, Source

RISK = (
    "Risk değerlendirmesi, kontrol, ölçüm ve araştırma MADDE 10 – (1) İşveren, iş sağlığı ve güvenliği "
    "yönünden risk değerlendirmesi yapmak veya yaptırmakla yükümlüdür. Risk değerlendirmesi yapılırken "
    "çalışanların durumu dikkate alınır. (2) Yapılan çalışmalar kayıt altına alınır."
)
SOURCES = [
    Source(1, 11, 1, "6331 İSG Kanunu", "6331.pdf", 7, 7, "Madde 10", 0.9, RISK),
    Source(2, 12, 1, "6331 İSG Kanunu", "6331.pdf", 8, 8, "Madde 11",
           0.5, "İşveren acil durum planlarını hazırlar ve gerekli tatbikatları yaptırır."),
]
QUESTION = "İşveren risk değerlendirmesi yapmakla yükümlü müdür?"


def _messages() -> list[dict]:
    return build_messages(QUESTION, SOURCES)


def _ollama(fake, **kw) -> OllamaGenerator:
    return OllamaGenerator(fake.url, "qwen2.5:7b-instruct", **kw)


def _openai(fake, model: str = "qwen2.5:7b-instruct", **kw) -> OpenAIGenerator:
    return OpenAIGenerator(f"{fake.url}/v1", model, **kw)


# ----------------------------------------------------------------------------- streaming


@pytest.mark.parametrize("make", [_ollama, _openai])
def test_streams_in_pieces(fake_llm, make) -> None:
    fake_llm.behaviour.reply_chunks = 5
    pieces = list(make(fake_llm).stream(_messages(), SOURCES, QUESTION))
    assert len(pieces) == 5
    assert "".join(pieces) == fake_llm.behaviour.reply


def test_ollama_request_carries_prompt_and_temperature(fake_llm) -> None:
    list(_ollama(fake_llm).stream(_messages(), SOURCES, QUESTION))
    body = fake_llm.bodies("/api/chat")[-1]
    assert body["stream"] is True and body["options"]["temperature"] == 0.1
    assert body["messages"][0]["content"] == SYSTEM_PROMPT


def test_openai_request_and_base_url_without_v1(fake_llm) -> None:
    generator = OpenAIGenerator(fake_llm.url, "qwen2.5:7b-instruct", api_key="k")
    assert "".join(generator.stream(_messages(), SOURCES, QUESTION)) == fake_llm.behaviour.reply
    body = fake_llm.bodies("/v1/chat/completions")[-1]
    assert body["stream"] is True and body["temperature"] == 0.1


@pytest.mark.parametrize("make", [_ollama, _openai])
def test_first_piece_arrives_before_the_stream_ends(fake_llm, make) -> None:
    """The server holds back everything after its first piece until the client has that piece;
    a client that buffered the response would see it only after the server sent the rest."""
    fake_llm.behaviour.reply_chunks = 3
    fake_llm.hold_after_first = threading.Event()
    stream = make(fake_llm).stream(_messages(), SOURCES, QUESTION)
    first = next(stream)
    fake_llm.events.append("client got the first piece")
    fake_llm.hold_after_first.set()
    rest = list(stream)
    assert first + "".join(rest) == fake_llm.behaviour.reply and len(rest) == 2
    assert fake_llm.events[:2] == ["sending 0", "client got the first piece"], fake_llm.events
    assert fake_llm.events[-1] == "sending 3"  # the final frame came after the client's first piece


# ----------------------------------------------------------------------------- failures


@pytest.mark.parametrize("make", [_ollama, _openai])
def test_server_down(make) -> None:
    class Down:
        url = "http://127.0.0.1:9"

    with pytest.raises(GeneratorError, match="çalışmıyor ya da erişilemiyor"):
        list(make(Down()).stream(_messages(), SOURCES, QUESTION))


@pytest.mark.parametrize("make", [_ollama, _openai])
def test_slow_server_times_out(fake_llm, make) -> None:
    fake_llm.behaviour.delay_before_first = 1.5
    with pytest.raises(GeneratorError, match="zaman aşımı"):
        list(make(fake_llm, read_timeout=0.3).stream(_messages(), SOURCES, QUESTION))


def test_ollama_missing_model_says_how_to_pull(fake_llm) -> None:
    fake_llm.behaviour.models = ["bge-m3:latest"]
    with pytest.raises(GeneratorError, match=r"ollama pull qwen2\.5:7b-instruct"):
        list(_ollama(fake_llm).stream(_messages(), SOURCES, QUESTION))


def test_openai_missing_model(fake_llm) -> None:
    with pytest.raises(GeneratorError, match="'nope' modeli"):
        list(_openai(fake_llm, "nope").stream(_messages(), SOURCES, QUESTION))


@pytest.mark.parametrize("make", [_ollama, _openai])
def test_server_error_status(fake_llm, make) -> None:
    fake_llm.behaviour.fail_status = 500
    with pytest.raises(GeneratorError, match="HTTP 500"):
        list(make(fake_llm).stream(_messages(), SOURCES, QUESTION))


@pytest.mark.parametrize("make", [_ollama, _openai])
def test_malformed_frame_is_a_generator_error(fake_llm, make) -> None:
    fake_llm.behaviour.reply_chunks = 4
    fake_llm.behaviour.malformed_after_chunks = 2
    received = []
    with pytest.raises(GeneratorError, match="anlaşılamayan bir cevap gönderdi"):
        for piece in make(fake_llm).stream(_messages(), SOURCES, QUESTION):
            received.append(piece)
    assert received == fake_llm.pieces()[:2]


@pytest.mark.parametrize("make", [_ollama, _openai])
@pytest.mark.parametrize("frame", ["[1, 2]", '"metin"', "null", '{"message": "duz metin", "choices": ["x"]}'])
def test_frames_of_the_wrong_shape(fake_llm, make, frame) -> None:
    """Valid JSON that is not an object is refused; an object of odd shape yields nothing from it."""
    generator = make(fake_llm)
    if frame.startswith("{"):
        assert generator._frame(frame)["message"] == "duz metin"
    else:
        with pytest.raises(GeneratorError, match="bozuk akış verisi"):
            generator._frame(frame)


@pytest.mark.parametrize("make", [_ollama, _openai])
def test_connection_dropped_mid_stream(fake_llm, make) -> None:
    fake_llm.behaviour.reply_chunks = 4
    fake_llm.behaviour.fail_after_chunks = 2
    received = []
    # The fake shuts the TCP connection down mid-body; the generous read timeout shows the client
    # fails on the broken stream itself, not by waiting.
    with pytest.raises(GeneratorError):
        for piece in make(fake_llm, read_timeout=30.0).stream(_messages(), SOURCES, QUESTION):
            received.append(piece)
    assert len(received) == 2


# ----------------------------------------------------------------------------- choice


def test_choose_backend(fake_llm) -> None:
    base = Settings(ollama_base_url=fake_llm.url, llm_backend="auto")
    up = OllamaStatus(True, ("qwen2.5:7b-instruct",))
    assert choose_generator_backend(base, up).kind == "ollama"
    no_model = OllamaStatus(True, ("bge-m3:latest",))
    choice = choose_generator_backend(base, no_model)
    assert choice.kind == "extractive" and "ollama pull" in choice.reason
    with_openai = base.replace(openai_base_url=f"{fake_llm.url}/v1")
    assert choose_generator_backend(with_openai, OllamaStatus(False)).kind == "openai"
    dead_openai = base.replace(openai_base_url="http://127.0.0.1:9/v1")
    assert choose_generator_backend(dead_openai, OllamaStatus(False)).kind == "extractive"
    assert choose_generator_backend(base.replace(llm_backend="extractive")).kind == "extractive"
    assert choose_generator_backend(base.replace(llm_backend="openai")).kind == "openai"


def test_make_generator(fake_llm) -> None:
    settings = Settings(ollama_base_url=fake_llm.url, llm_backend="auto")
    assert isinstance(make_generator(settings, None), OllamaGenerator)
    assert isinstance(make_generator(settings.replace(llm_backend="extractive"), None), ExtractiveGenerator)
    with pytest.raises(GeneratorError, match="OPENAI_BASE_URL"):
        make_generator(settings.replace(llm_backend="openai"), None)


# ----------------------------------------------------------------------------- after generation


def test_parse_citations_drops_markers_outside_the_context() -> None:
    text, cited = parse_citations("Evet [2], yükümlüdür [1, 7] [9].", 2)
    assert cited == (2, 1)
    assert text == "Evet [2], yükümlüdür [1]."


def test_refusal_becomes_the_fallback() -> None:
    assert finalize(FALLBACK_ANSWER, SOURCES).kind == KIND_REFUSAL
    assert finalize(f"Üzgünüm. {FALLBACK_ANSWER}", SOURCES).text == FALLBACK_ANSWER


@pytest.mark.parametrize("said", [
    "Bu bilgi bağlamda bulunmamaktadır.",
    "Metinde bu konuda bir bilgi yer almıyor.",
    "Sağlanan belgelerde bu soruya cevap veremiyorum.",
])
def test_a_refusal_in_the_models_own_words_becomes_the_fallback(said: str) -> None:
    """Issue 40: the app and the lab have one refusal detector; what the lab counts as refused the
    chat no longer shows as an answer with a citation."""
    result = finalize(said, SOURCES)
    assert (result.kind, result.text, result.cited) == (KIND_REFUSAL, FALLBACK_ANSWER, ())


def test_an_answer_that_says_something_is_absent_is_still_an_answer() -> None:
    """A long one, and a short one that cites its source."""
    assert finalize("Kanunda bu süre belirtilmemiş [1].", SOURCES).kind == KIND_ANSWER
    said = ("İşveren, çalışanların sağlık gözetimini yaptırmakla yükümlüdür; ancak Kanunda bu gözetimin "
            "hangi aralıklarla yapılacağı belirtilmemiş olup bu konu yönetmelikle düzenlenir ve işyerinin "
            "tehlike sınıfına, çalışanların yaşına ve yaptıkları işin risklerine göre değişir.")
    assert finalize(said, SOURCES).kind == KIND_ANSWER


def test_citations_with_spaces_inside_the_brackets_are_read() -> None:
    text, cited = parse_citations("Evet [ 2 ], yükümlüdür [1 ,2].", 2)
    assert (text, cited) == ("Evet [2], yükümlüdür [1][2].", (2, 1))


def test_instruction_echo_is_not_a_refusal() -> None:
    echo = ("Yalnızca numaralandırılmış bağlam bölümlerindeki bilgilerle cevap vermeliyim, kaynağı köşeli "
            f"parantez içinde yazmalıyım; cevap yoksa şu cümleyi aynen yazarım: {FALLBACK_ANSWER}")
    assert finalize(echo, SOURCES).kind == KIND_ECHO
    assert finalize(SYSTEM_PROMPT, SOURCES).kind == KIND_ECHO


def test_real_answer_is_kept() -> None:
    result = finalize("Evet, işveren risk değerlendirmesi yapmak veya yaptırmakla yükümlüdür [1].", SOURCES)
    assert result.kind == KIND_ANSWER and result.cited == (1,)
