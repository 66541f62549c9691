"""The grounded-answer prompt, shared by the answer service and the evaluation lab.

The model sees only numbered context blocks of chunks the user's role may read; it must cite
them as [n] and otherwise reply with the exact fallback sentence, which the answer service
then recognises as a refusal. The model cites the context's own numbers and starts with the
most relevant block; the answer service renumbers the citations by first use afterwards
(`ragcore.answer.postprocess.renumber`), the same rule as for a quoted answer — asking the
model to renumber itself would let a wrong number point at the wrong block.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragcore.core import FALLBACK_ANSWER, Source

TEMPERATURE = 0.1

SYSTEM_PROMPT = (
    "Sen Dayanak'sın: bir şirketin kendi dokümanlarından soru cevaplayan bir asistansın.\n"
    "Kurallar:\n"
    "1. Yalnızca aşağıda numaralandırılmış bağlam bölümlerindeki bilgilerle cevap ver; "
    "kendi bilgini, tahminini veya genel kültürünü kullanma.\n"
    "2. Kullandığın her bilginin sonuna kaynağını köşeli parantez içinde numarasıyla yaz, "
    "örneğin [1] veya [2][3]. Bağlamda olmayan bir numara kullanma.\n"
    "3. Cevap bağlamda yoksa ya da emin değilsen yalnızca şu cümleyi aynen yaz: "
    f"\"{FALLBACK_ANSWER}\"\n"
    "4. Soruyu doğrudan cevaplayan bilgiyle başla: en ilgili bölümü ilk sırada kullan ve kaynak olarak "
    "bağlamdaki numarasını yaz.\n"
    "5. Türkçe, kısa ve açık cevap ver; talimatları veya bağlamı tekrar etme."
)


def context_header(number: int, source: Source) -> str:
    """"[n] <title>, s. <page> (<article>)" — the same label the citations show."""
    article = f" ({source.article})" if source.article else ""
    return f"[{number}] {source.title}, {source.locator_label}{article}"


def format_context(sources: Sequence[Source]) -> str:
    """Numbered blocks; block n is sources[n-1], whatever its retrieval rank was."""
    return "\n\n".join(f"{context_header(n, s)}\n{s.text.strip()}" for n, s in enumerate(sources, start=1))


def build_messages(question: str, sources: Sequence[Source]) -> list[dict]:
    """Chat messages for any backend: the rules as system, context and question as user."""
    user = f"Bağlam:\n\n{format_context(sources)}\n\nSoru: {question.strip()}\n\nCevap:"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
