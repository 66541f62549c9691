"""Turkish names for the lab's own identifiers: retrieval methods ("bm25-prefix5", "production-rrf"),
the TQuAD runs' kinds, and what an answer came to (`RESULT_LABELS`).

The identifiers stay what they are in run folders, the CLI and summary.json; the lab page, job
labels and progress lines show these names, so a reader meets "Sözcük eşleşmesi (ilk 5 harf)"
rather than a code. An unknown name is shown as it is (a run folder from an older version).
"""

from __future__ import annotations

import re

# TQuAD is a public question set written on Turkish Wikipedia articles; the page calls it by that.
TQUAD_NAME = "Vikipedi soruları"

RETRIEVER_LABELS = {
    "bm25": "Sözcük eşleşmesi (sözcükler olduğu gibi)",
    "bm25-prefix5": "Sözcük eşleşmesi (ilk 5 harf)",
    "bm25-snowball": "Sözcük eşleşmesi (kök bulma)",
    "bm25-plain-stop": "Sözcük eşleşmesi (sık sözcükler atılmış)",
    "bm25-prefix5-stop": "Sözcük eşleşmesi (ilk 5 harf, sık sözcükler atılmış)",
    "bm25-snowball-stop": "Sözcük eşleşmesi (kök bulma, sık sözcükler atılmış)",
    "bm25-app": "Sözcük eşleşmesi (uygulamanınki)",
    "dense": "Vektör benzerliği",
    "hybrid": "Sıra birleştirme (vektör + sözcük)",
    "hybrid-weighted": "Ağırlıklı birleştirme (vektör + sözcük)",
    "production": "Uygulamanın araması (kendi seçtiği modla)",
    "production-lexical": "Uygulamanın araması: yalnız sözcük",
    "production-dense": "Uygulamanın araması: yalnız vektör",
    "production-rrf": "Uygulamanın araması: sıra birleştirme",
    "production-weighted": "Uygulamanın araması: ağırlıklı birleştirme",
}


def retriever_label(name: str) -> str:
    """"hybrid-weighted-w0.3" (a fixed weight) reads "Ağırlıklı birleştirme (…), vektör ağırlığı 0,3"."""
    fixed = re.fullmatch(r"(.+)-w(\d+(?:\.\d+)?)", name)
    if fixed and fixed[1] in RETRIEVER_LABELS:
        return f"{RETRIEVER_LABELS[fixed[1]]}, vektör ağırlığı {fixed[2].replace('.', ',')}"
    return RETRIEVER_LABELS.get(name, name)


def system_label(system: str) -> str:
    """A sweep's system "bm25-prefix5@1000" as "Sözcük eşleşmesi (ilk 5 harf) · 1000 karakter"."""
    name, at, size = system.rpartition("@")
    return f"{retriever_label(name)} · {size} karakter" if at else retriever_label(system)


# What a user met (eval.answers.RESULTS, eval.gold_stats.RESULTS): an answer, right or wrong, the
# closest passages (the app's own word for them: "en yakın parçalar"), or the refusal sentence.
RESULT_LABELS = {"correct": "Doğru cevap", "wrong": "Yanlış cevap", "closest": "En yakın parçalar",
                 "refused": "Reddedildi (dokümanlarda yok)", "answered": "Cevap verildi"}
# The same on a question that has no answer in the documents: any answer is wrong there.
UNANSWERABLE_RESULT_LABELS = {**RESULT_LABELS, "wrong": "Cevap verildi (yanlış)"}
# The older TQuAD outcomes (eval.answers.OUTCOMES), for runs made before the three outcomes.
OUTCOME_LABELS = {"correct": "Doğru", "correct_not_in_context": "Doğru (bağlamda yok)", "fallback": "Cevap yok",
                  "wrong": "Yanlış"}
