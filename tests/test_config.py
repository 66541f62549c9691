import re
from pathlib import Path
from typing import get_args

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
    fields = {name.upper() for name in Settings.model_fields}
    assert fields == set(SETTINGS_DOC)


def test_every_declaration_has_an_english_and_a_turkish_help_line():
    """One declaration per setting carries both help lines (docs in English, `doctor` in Turkish)."""
    declarations = list(Settings.declarations())
    assert len(declarations) == len(Settings.model_fields)
    missing = [(s.name, lang) for s in declarations for lang, text in (("en", s.en), ("tr", s.tr))
               if len(text.strip()) < 8]
    assert missing == []


def test_the_configuration_doc_table_is_the_declarations():
    """The table in docs/configuration.md is written from the declarations; regenerate it with
    `python -m ragcore doctor --settings-table` when a setting changes."""
    text = CONFIGURATION.read_text(encoding="utf-8")
    lines = text.splitlines()
    start = lines.index("| variable | default | meaning |")
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    assert "\n".join(lines[start:end]) == Settings.docs_table()


def test_secrets_are_declared_secret():
    secret = {s.name for s in Settings.declarations() if s.secret}
    assert secret == {"OPENAI_API_KEY", "COOKIE_KEY", "ADMIN_PASSWORD", "LDAP_BIND_PASSWORD", "OIDC_CLIENT_SECRET"}
    s = Settings(ldap_bind_password="bind-pw-123", openai_api_key="oidc-secret-456")
    assert "bind-pw-123" not in repr(s) and "oidc-secret-456" not in str(s)
    assert "bind-pw-123" not in str(s.model_dump()) and s.replace(top_k=3).ldap_bind_password == "bind-pw-123"


def _typed_fields() -> list[tuple[str, str]]:
    """Every declared number, switch and choice, with a value of the wrong type for it."""
    wrong = {int: "12abc", float: "çok", bool: "belki"}
    cases = []
    for name, info in Settings.model_fields.items():
        annotation = info.annotation
        if annotation in wrong:
            cases.append((name.upper(), wrong[annotation]))
        elif get_args(annotation) and all(isinstance(arg, str) for arg in get_args(annotation)):
            cases.append((name.upper(), "yok-böyle-bir-seçenek"))  # a Literal's choices
    return cases


@pytest.mark.parametrize(("name", "raw"), _typed_fields())
def test_a_wrong_type_in_the_environment_names_the_variable(name, raw):
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({name: raw}, dotenv=None)
    assert str(caught.value).startswith(f"{name} must be ") and repr(raw) in str(caught.value)


def test_typed_fields_cover_the_numbers_switches_and_choices():
    names = {name for name, _ in _typed_fields()}
    assert {"CHUNK_SIZE", "LLM_ANSWER_SECONDS", "DENSE_WINDOWS", "EMBED_BACKEND", "API_PORT"} <= names
    assert len(names) > 40


def test_replace_is_validated_and_knows_its_fields(settings):
    assert settings.replace(top_k=9).top_k == 9 and settings.top_k == 5
    assert settings.replace(top_k=9).data_dir == settings.data_dir
    with pytest.raises(SettingsError, match="CHUNK_OVERLAP \\(150\\) must be smaller than CHUNK_SIZE \\(120\\)"):
        settings.replace(chunk_size=120)
    with pytest.raises(SettingsError, match="TOP_K must be at least 1"):
        settings.replace(top_k=0)
    with pytest.raises(TypeError, match="top_kk"):
        settings.replace(top_kk=3)


def test_direct_construction_ignores_the_environment(monkeypatch):
    """`Settings(...)` is the declared defaults (tests build isolated settings); only from_env reads."""
    monkeypatch.setenv("TOP_K", "9")
    assert Settings().top_k == 5 and Settings.from_env(dotenv=None).top_k == 9


def test_every_shown_default_has_its_turkish_words():
    """`doctor --settings` in Turkish says "(boş)" for the docs' "(unset)", and so for every "(…)"
    a declaration shows as its default: a new one without Turkish words fails here."""
    from ragcore.core import shown_in_turkish

    declarations = Settings.declarations()
    another_setting = {f"({s.name})" for s in declarations}  # "(LDAP_USER_BASE_DN)": a name, the same in Turkish
    shown = {s.default for s in declarations if not s.literal and s.default.startswith("(")} | {"(unset)"}
    untranslated = sorted(words for words in shown - another_setting if shown_in_turkish(words) == words)
    assert len(shown - another_setting) >= 5 and untranslated == []
