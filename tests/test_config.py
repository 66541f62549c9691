import re
from pathlib import Path

import pytest

from ragcore.core import SETTINGS_DOC, Settings, SettingsError

CONFIGURATION = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_defaults_without_environment(tmp_path):
    s = Settings.from_env({}, dotenv=None)
    assert s.database_url is None
    assert s.data_dir == Path("data").absolute()
    assert (s.chunk_size, s.chunk_overlap, s.top_k) == (1000, 150, 5)
    assert s.embed_backend == "auto" and s.llm_backend == "auto"
    assert s.cookie_key is None and s.admin_password is None
    assert s.min_free_disk_mb == 1024 and s.min_free_disk_bytes == 1024 ** 3  # uploads need 1 GB free


def test_a_language_model_answer_is_bounded_by_default_and_by_setting():
    """Without these bounds an answer lasts as long as the model server lets it (issue 36)."""
    s = Settings.from_env({}, dotenv=None)
    assert (s.llm_max_tokens, s.llm_answer_seconds) == (512, 60.0)
    s = Settings.from_env({"LLM_MAX_TOKENS": "256", "LLM_ANSWER_SECONDS": "2.5"}, dotenv=None)
    assert (s.llm_max_tokens, s.llm_answer_seconds) == (256, 2.5)


def test_page_drawing_bounds_default_and_parse():
    """The pixel budget and OCR caps of issue 36: an A4 page at 300 dpi (8.7 megapixels) fits the default."""
    s = Settings.from_env({}, dotenv=None)
    assert (s.render_max_megapixels, s.page_image_min_dpi, s.ocr_min_dpi) == (20, 50, 150)
    assert (s.ocr_max_pages, s.ocr_page_seconds) == (500, 60.0)
    s = Settings.from_env({"RENDER_MAX_MEGAPIXELS": "8", "PAGE_IMAGE_MIN_DPI": "72", "OCR_MIN_DPI": "200",
                           "OCR_MAX_PAGES": "20", "OCR_PAGE_SECONDS": "2.5"}, dotenv=None)
    assert (s.render_max_megapixels, s.page_image_min_dpi, s.ocr_min_dpi, s.ocr_max_pages, s.ocr_page_seconds) == (
        8, 72, 200, 20, 2.5)


def test_trusted_proxies_default_to_none_and_are_normalised_networks():
    assert Settings.from_env({}, dotenv=None).trusted_proxies == ()  # not even 127.0.0.1
    s = Settings.from_env({"TRUSTED_PROXIES": " 10.0.0.5, 10.1.0.0/16 ,::1,10.0.0.5/32"}, dotenv=None)
    assert s.trusted_proxies == ("10.0.0.5/32", "10.1.0.0/16", "::1/128")


def test_docx_caps_default_to_what_a_real_manual_never_reaches():
    s = Settings.from_env({}, dotenv=None)
    assert (s.docx_max_unpacked_mb, s.docx_max_elements, s.docx_max_paragraphs, s.docx_max_depth,
            s.docx_max_characters) == (256, 3_000_000, 200_000, 100, 10_000_000)
    s = Settings.from_env({"DOCX_MAX_PARAGRAPHS": "50000", "DOCX_MAX_UNPACKED_MB": "64"}, dotenv=None)
    assert (s.docx_max_paragraphs, s.docx_max_unpacked_mb) == (50_000, 64)


def test_environment_overrides_dotenv(tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text("CHUNK_SIZE=800\nTOP_K=7\nEMBED_BACKEND=use\n")
    s = Settings.from_env({"TOP_K": "3"}, dotenv=dotenv)
    assert (s.chunk_size, s.top_k, s.embed_backend) == (800, 3, "use")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, None), ("", None), ("   ", None), ("none", ""), ("NONE", ""), ("search_query: ", "search_query: ")],
)
def test_embedding_prefixes_unset_none_or_verbatim(raw, expected):
    env = {} if raw is None else {"EMBED_QUERY_PREFIX": raw, "EMBED_PASSAGE_PREFIX": raw}
    s = Settings.from_env(env, dotenv=None)
    assert s.embed_query_prefix == expected and s.embed_passage_prefix == expected


def test_e5_is_a_backend():
    assert Settings.from_env({"EMBED_BACKEND": "E5"}, dotenv=None).embed_backend == "e5"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CHUNK_SIZE": "abc"}, "CHUNK_SIZE must be an integer"),
        ({"CHUNK_SIZE": "500", "CHUNK_OVERLAP": "500"}, "CHUNK_OVERLAP (500) must be smaller"),
        ({"EMBED_BACKEND": "openai"}, "EMBED_BACKEND must be one of"),
        ({"LLM_BACKEND": "gpt"}, "LLM_BACKEND must be one of"),
        ({"TOP_K": "0"}, "TOP_K must be at least 1"),
        ({"MIN_FREE_DISK_MB": "-1"}, "MIN_FREE_DISK_MB must be at least 0"),
        ({"MIN_FREE_DISK_MB": "1GB"}, "MIN_FREE_DISK_MB must be an integer"),
        ({"REFUSAL_THRESHOLD": "high"}, "REFUSAL_THRESHOLD must be a number"),
        ({"TRUSTED_PROXIES": "10.0.0.5, proxy.local"}, "TRUSTED_PROXIES must list IP addresses or networks"),
        ({"TRUSTED_PROXIES": "*"}, "TRUSTED_PROXIES must list IP addresses or networks"),
        ({"LLM_MAX_TOKENS": "0"}, "LLM_MAX_TOKENS must be at least 16"),
        ({"LLM_MAX_TOKENS": "100000"}, "LLM_MAX_TOKENS must be at most 8192"),
        ({"LLM_MAX_TOKENS": "çok"}, "LLM_MAX_TOKENS must be an integer"),
        ({"LLM_ANSWER_SECONDS": "0"}, "LLM_ANSWER_SECONDS must be between 1 and 3600"),
        ({"LLM_ANSWER_SECONDS": "nan"}, "LLM_ANSWER_SECONDS must be between 1 and 3600"),
        ({"LLM_ANSWER_SECONDS": "inf"}, "LLM_ANSWER_SECONDS must be between 1 and 3600"),
        ({"RENDER_MAX_MEGAPIXELS": "0"}, "RENDER_MAX_MEGAPIXELS must be at least 1"),
        ({"PAGE_IMAGE_MIN_DPI": "5"}, "PAGE_IMAGE_MIN_DPI must be at least 10"),
        ({"OCR_MIN_DPI": "many"}, "OCR_MIN_DPI must be an integer"),
        ({"OCR_MAX_PAGES": "0"}, "OCR_MAX_PAGES must be at least 1"),
        ({"OCR_PAGE_SECONDS": "0"}, "OCR_PAGE_SECONDS must be positive"),
        ({"DOCX_MAX_DEPTH": "300"}, "DOCX_MAX_DEPTH must be at most 256"),
        ({"DOCX_MAX_DEPTH": "5"}, "DOCX_MAX_DEPTH must be at least 10"),
        ({"DOCX_MAX_PARAGRAPHS": "0"}, "DOCX_MAX_PARAGRAPHS must be at least 1"),
    ],
)
def test_bad_values_name_the_variable(env, message):
    with pytest.raises(SettingsError, match=re.escape(message)):
        Settings.from_env(env, dotenv=None)


def test_secrets_are_not_in_repr():
    s = Settings(cookie_key="k" * 20, admin_password="p" * 12, openai_api_key="sk-x")
    assert "kkkk" not in repr(s) and "pppp" not in repr(s) and "sk-x" not in repr(s)


def test_every_setting_is_documented_in_the_configuration_doc():
    text = CONFIGURATION.read_text(encoding="utf-8")
    missing = [name for name in SETTINGS_DOC if f"`{name}`" not in text]
    assert missing == []


def test_every_settings_field_has_a_documented_variable():
    fields = {name.upper() for name in Settings.__dataclass_fields__}
    assert fields == set(SETTINGS_DOC)
