from ragcore.answer import SYSTEM_PROMPT, TEMPERATURE, build_messages, context_header
from ragcore.core import FALLBACK_ANSWER, Source


def _source(rank: int, article: str | None, pages: tuple[int, int] = (7, 7)) -> Source:
    return Source(rank=rank, chunk_id=rank, document_id=1, title="6331 İSG Kanunu", filename="6331.pdf",
                  page_start=pages[0], page_end=pages[1], article=article, score=0.5, text=f"  metin {rank}  ")


def test_system_prompt_rules() -> None:
    assert FALLBACK_ANSWER in SYSTEM_PROMPT
    assert "[1]" in SYSTEM_PROMPT and "Yalnızca" in SYSTEM_PROMPT
    assert TEMPERATURE == 0.1


def test_context_blocks_are_numbered_with_title_page_and_article() -> None:
    assert context_header(1, _source(1, "Madde 10")) == "[1] 6331 İSG Kanunu, s. 7 (Madde 10)"
    assert context_header(2, _source(2, None, (7, 8))) == "[2] 6331 İSG Kanunu, s. 7–8"


def test_build_messages() -> None:
    messages = build_messages("  Risk değerlendirmesi zorunlu mu? ", [_source(1, "Madde 10"), _source(2, None)])
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "[1] 6331 İSG Kanunu, s. 7 (Madde 10)\nmetin 1" in user
    assert "[2] 6331 İSG Kanunu, s. 7\nmetin 2" in user
    assert user.rstrip().endswith("Soru: Risk değerlendirmesi zorunlu mu?\n\nCevap:")
