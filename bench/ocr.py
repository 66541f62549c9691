"""OCR of a scanned Law 6331: `python -m bench.ocr [--pages 3,8,12] [--dpi 200,300] [--recall-pages 8]`.

The scan is made here, never committed: each page of the text PDF drawn by PDFium at
SCAN_DPI in grayscale and saved as a JPEG page of an image-only PDF (Pillow), which is what an
office scanner sends. Then, per OCR resolution (`--dpi`), the app's own reader
(`ragcore.documents.ocr.read_pages`: PDFium draws, Tesseract reads) on `--pages`, one page at a
time: wall seconds per page, the Tesseract processes' CPU seconds, and the character accuracy
against the page's text layer (`character_accuracy`). Last, retrieval: the first
`--recall-pages` pages as a text copy and as a scanned copy, both ingested through `ingest_pdf`
into a scratch embedded database (the text copy readable by one role, the scan by another, so
each role searches one copy with its own statistics), and the held-out-style questions on those
pages (`held_out_questions`) asked as each role: Recall@5 of the expected article, and the
scanned/text ratio. The tests (tests/test_ocr.py) use the same helpers and assert the accuracy
and the ratio; the seconds are only measured here. Writes bench/results/ocr.md and its run card.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pypdfium2 as pdfium
from rapidfuzz.distance import Levenshtein

from bench import publish

REPO = Path(__file__).resolve().parent.parent
LAW_6331 = "6331-is-sagligi-ve-guvenligi-kanunu.pdf"
# The sets whose questions were written from the law text alone, before any retrieval run
# (eval/gold/README.md); the paraphrase set is never tuned on, the everyday set's dev half neither.
GOLD_SETS = (REPO / "eval" / "gold" / "paraphrase_laws.jsonl", REPO / "eval" / "gold" / "everyday_laws.jsonl")
SCAN_DPI = 300
SCAN_QUALITY = 85  # JPEG quality of the scanned pages


def scanned_copy(data: bytes, pages: Sequence[int] | None = None, *, dpi: int = SCAN_DPI) -> bytes:
    """An image-only PDF of `pages` (1-based; all by default): no text layer, like a scan."""
    source = pdfium.PdfDocument(data)
    try:
        numbers = list(pages or range(1, len(source) + 1))
        images = []
        for number in numbers:
            page = source[number - 1]
            images.append(page.render(scale=dpi / 72, grayscale=True).to_pil())
            page.close()
    finally:
        source.close()
    out = io.BytesIO()
    images[0].save(out, "PDF", save_all=True, append_images=images[1:], resolution=float(dpi), quality=SCAN_QUALITY)
    return out.getvalue()


def text_copy(data: bytes, pages: Sequence[int]) -> bytes:
    """A PDF of `pages` (1-based) with their text layer, as the original has it."""
    source = pdfium.PdfDocument(data)
    copy = pdfium.PdfDocument.new()
    try:
        copy.import_pages(source, [n - 1 for n in pages])
        out = io.BytesIO()
        copy.save(out)
        return out.getvalue()
    finally:
        copy.close()
        source.close()


def character_accuracy(ocr_text: str, reference: str) -> float:
    """1 − Levenshtein distance / reference length, whitespace runs counted as one space (Tesseract
    and pypdf break lines in different places; a line break is not a reading error).
    rapidfuzz computes the distance (C++, exact); difflib's ratio is not an edit distance."""
    ocr_flat, ref_flat = (re.sub(r"\s+", " ", text).strip() for text in (ocr_text, reference))
    if not ref_flat:
        return 1.0 if not ocr_flat else 0.0
    return 1.0 - Levenshtein.distance(ocr_flat, ref_flat) / len(ref_flat)


def held_out_questions(max_page: int) -> list[tuple[str, str]]:
    """(question, expected article) for the answerable questions of the gold sets whose Law 6331
    answer lies within its first `max_page` pages."""
    found = []
    for path in GOLD_SETS:
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            for expected in item.get("expected", []):
                if expected["document"] == LAW_6331 and max(expected["pages"]) <= max_page:
                    found.append((item["question"], expected["article"]))
    return found


def recall_at_5(db, embedder, questions: Sequence[tuple[str, str]], role: str) -> float:
    """Share of questions whose expected article is among the role's top 5 (retrieval's auto mode)."""
    from ragcore.retrieval import search

    hits = sum(any(s.article == article for s in search(db, embedder, question, role, k=5))
               for question, article in questions)
    return hits / len(questions) if questions else float("nan")


def time_pages(scan: bytes, numbers: Sequence[int], dpi: int) -> tuple[list[float], list]:
    """Wall seconds of `read_pages` for each page alone, and the readings; the CPU of Tesseract
    is in RUSAGE_CHILDREN."""
    from ragcore.core import Settings
    from ragcore.documents import OcrLimits, ocr_pages

    limits = OcrLimits.of(Settings.from_env())
    seconds, readings = [], []
    for number in numbers:
        started = time.perf_counter()
        readings.append(ocr_pages(scan, [number], limits, dpi=dpi)[number])
        seconds.append(time.perf_counter() - started)
    return seconds, readings


def measure_reading(data: bytes, pages: Sequence[int], dpis: Sequence[int]) -> list[dict]:
    from ragcore.documents import extract_pages, normalize_page_text

    reference = {p.number: p.text for p in extract_pages(data, use_ocr=False).pages}
    scan = scanned_copy(data, pages)
    rows = []
    for dpi in dpis:
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds, readings = time_pages(scan, range(1, len(pages) + 1), dpi)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        children_cpu = (after.ru_utime + after.ru_stime) - (cpu.ru_utime + cpu.ru_stime)
        accuracy = {page: character_accuracy(normalize_page_text(reading.text), reference[page])
                    for page, reading in zip(pages, readings, strict=True)}
        rows.append({"dpi": dpi, "pages": list(pages), "seconds": seconds, "median_s": statistics.median(seconds),
                     "tesseract_cpu_s_per_page": children_cpu / len(pages), "accuracy": accuracy,
                     "mean_accuracy": statistics.mean(accuracy.values())})
        print(f"{dpi} dpi: {statistics.median(seconds):.2f} s/page, accuracy {rows[-1]['mean_accuracy']:.4f}",
              file=sys.stderr, flush=True)
    return rows


def measure_recall(data: bytes, n_pages: int) -> dict:
    from ragcore import store as dbmod
    from ragcore.core import Settings
    from ragcore.documents import ingest_pdf
    from ragcore.embed import make_embedder

    pages = list(range(1, n_pages + 1))
    questions = held_out_questions(n_pages)
    root = Path(tempfile.mkdtemp(prefix="dayanak-bench-ocr-"))
    settings = Settings(data_dir=root / "data", embed_backend="use", llm_backend="extractive")
    db = dbmod.Database(dbmod.embedded_url(root / "server"))
    try:
        dbmod.migrate(db)
        embedder = make_embedder(settings)
        ingest_pdf(db, settings, embedder, text_copy(data, pages), filename="6331-metin.pdf", roles=["isg"])
        started = time.perf_counter()
        scanned = ingest_pdf(db, settings, embedder, scanned_copy(data, pages), filename="6331-tarama.pdf",
                             roles=["ik"])
        ingest_s = time.perf_counter() - started
        text_recall, scan_recall = recall_at_5(db, embedder, questions, "isg"), recall_at_5(db, embedder, questions, "ik")
    finally:
        db.close()
        dbmod.stop_embedded(root / "server")
        shutil.rmtree(root, ignore_errors=True)
    return {"pages": n_pages, "questions": len(questions), "embedder": "use", "text_recall_at_5": text_recall,
            "scanned_recall_at_5": scan_recall, "ratio": scan_recall / text_recall if text_recall else None,
            "scanned_ingest_s": ingest_s, "scanned_ocr_pages": len(scanned.ocr_pages)}


def table(reading: list[dict], recall: dict | None) -> str:
    lines = [
        f"## OCR (Tesseract `tur`, a {SCAN_DPI}-dpi grayscale JPEG scan of Law 6331)",
        "",
        "| OCR dpi | pages | s / page (median) | Tesseract CPU s / page | character accuracy (mean) | per page |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for r in reading:
        per_page = ", ".join(f"s. {p}: {a:.4f}" for p, a in r["accuracy"].items())
        lines.append(f"| {r['dpi']} | {', '.join(map(str, r['pages']))} | {r['median_s']:.2f} "
                     f"| {r['tesseract_cpu_s_per_page']:.2f} | {r['mean_accuracy']:.4f} | {per_page} |")
    if recall:
        lines += ["", f"Retrieval on the first {recall['pages']} pages, {recall['questions']} held-out-style "
                      f"questions (paraphrase and everyday sets), {recall['embedder']} embedder: Recall@5 text copy "
                      f"{recall['text_recall_at_5']:.3f}, scanned copy {recall['scanned_recall_at_5']:.3f}, ratio "
                      f"**{recall['ratio']:.3f}**; ingesting the scan took {recall['scanned_ingest_s']:.1f} s."]
    lines += ["", f"One Tesseract thread per page, as the app runs it (ragcore/documents/ocr.py); "
                  f"{os.cpu_count()} cores, load average after the run {os.getloadavg()[0]:.1f} (the machine may be shared)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from ragcore.core import Settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default="3,8,12", help="pages of Law 6331 to time (1-based)")
    parser.add_argument("--dpi", default="200,300", help="OCR resolutions to compare")
    parser.add_argument("--recall-pages", type=int, default=8, help="first N pages for the retrieval check (0: skip)")
    args = parser.parse_args(argv)
    data = (Settings.from_env().documents_dir / LAW_6331).read_bytes()
    reading = measure_reading(data, [int(p) for p in args.pages.split(",")], [int(d) for d in args.dpi.split(",")])
    recall = measure_recall(data, args.recall_pages) if args.recall_pages else None
    publish("ocr", table(reading, recall), numbers={"reading": reading, "recall": recall, "scan_dpi": SCAN_DPI})
    return 0


if __name__ == "__main__":
    sys.exit(main())
