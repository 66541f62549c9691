import pytest

from ragcore.core import (
    ascii_typed_words,
    get_tokenizer,
    lexical_tokens,
    normalize,
    respell_word_prefixes,
    turkish_lower,
    words,
)


def test_turkish_lowercasing_of_dotted_and_dotless_i():
    assert turkish_lower("IĞDIR İSTANBUL") == "ığdır istanbul"
    assert turkish_lower("İŞVEREN") == "işveren"


def test_decomposed_capital_i_with_dot_folds_to_i():
    assert turkish_lower("I\u0307zmir") == "izmir"


def test_nfkc_folds_ligatures():
    assert normalize("ﬁrma") == "firma"


def test_words_split_apostrophes_and_punctuation():
    assert words("Türkiye'nin (1) fıkrası, 6331 sayılı") == ["türkiye", "nin", "1", "fıkrası", "6331", "sayılı"]


def test_lexical_tokens_are_prefix_five():
    assert lexical_tokens("Değerlendirmesi İşverenin risk") == ["değer", "işver", "risk"]


def test_stopword_variant_drops_function_words_and_keeps_alignment():
    tokenize = get_tokenizer("prefix5-stop")
    assert tokenize("Bu işveren ve çalışanlar için") == ["işver", "çalış"]


def test_snowball_variant_stems():
    stems = get_tokenizer("snowball")("kitaplarımızdan")
    assert len(stems) == 1 and stems[0].startswith("kitap")


def test_unknown_tokenizer_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown tokenizer 'x'"):
        get_tokenizer("x")


def test_respelled_prefixes_keep_the_rest_of_each_word_and_every_other_character():
    prefixes = {"ısten": "işten", "cikar": "çıkar", "ıscin": "işçin", "is": "iş"}  # keys: Turkish-lowercased tokens
    assert respell_word_prefixes("Isten cikarildim, is yerinde Iscinin hakki?", prefixes) \
        == "işten çıkarildim, iş yerinde işçinin hakki?"
    assert respell_word_prefixes("isten cikarildim", {}) == "isten cikarildim"
    assert respell_word_prefixes("istenen cikarma", {"isten": "işten"}) == "iştenen cikarma"  # by prefix, as the lexical tokens
    assert respell_word_prefixes("Gece vardiyasında çalışıyoruz", {"vardi": "vardı"}) == "Gece vardiyasında çalışıyoruz"


def test_ascii_typed_words_are_those_without_any_turkish_letter():
    assert ascii_typed_words("Gece vardiyasında ISTEN cikarildim, İşçi hakki") == ["gece", "ısten", "cikarildim", "hakki"]
