"""The gold-set file format (eval/goldset.py): every kind of bad row is named by line and field,
a file with any problem yields nothing, and JSONL and CSV carry the same content both ways."""

from __future__ import annotations

import json

import pytest

from eval import goldset
from eval.goldset import GoldFormatError, parse_csv, parse_file, parse_jsonl
from tests.conftest import REPO

SAMPLE = REPO / "eval" / "gold" / "paraphrase_laws.jsonl"
GOOD = {"id": "a1", "question": "Yillik izin kac gun?", "answerable": True,
        "expected": [{"document": "ik.pdf", "article": "Madde 53", "pages": [4]}], "roles": ["ik"],
        "key_facts": ["on dort gun"], "notes": ""}
UNANSWERABLE = {"id": "a2", "question": "Yemekhane kacta acilir?", "answerable": False, "expected": [],
                "roles": ["personel"], "key_facts": [], "notes": "sirkete ozel"}


def _line(**changes) -> str:
    row = {**GOOD, **changes}
    return json.dumps({k: v for k, v in row.items() if v is not ...}, ensure_ascii=False)


def _problems(text: str, parser=parse_jsonl) -> list[str]:
    with pytest.raises(GoldFormatError) as info:
        parser(text)
    return info.value.problems


BAD_JSONL = {
    "not JSON": ('{"id": "a1", "question": ', "satır 2: geçerli bir JSON değil"),
    "not an object": ('["a1", "soru"]', "satır 2: bir JSON nesnesi olmalı"),
    "missing question": (_line(question=...), "satır 2, alan “question”: eksik"),
    "missing roles": (_line(roles=...), "satır 2, alan “roles”: eksik"),
    "unknown field": (_line(rol=["ik"]), "satır 2, alan “rol”: bilinmeyen alan"),
    "answerable not a bool": (_line(answerable="evet"), "satır 2, alan “answerable”: true ya da false olmalı"),
    "empty question": (_line(question="   "), "satır 2, alan “question”: boş olamaz"),
    "question too long": (_line(question="x" * 1001), "satır 2, alan “question”: en fazla 1000 karakter"),
    "bad id": (_line(id="a 1"), "satır 2, alan “id”: “a 1” geçersiz"),
    "unknown role": (_line(roles=["muhasebe"]), "satır 2, alan “roles”: bilinmeyen rol 'muhasebe'"),
    "no roles": (_line(roles=[]), "satır 2, alan “roles”: en az bir rol"),
    "answerable without expected": (_line(expected=[]), "satır 2, alan “expected”: cevaplanabilir bir soru en az bir"),
    "unanswerable with expected": (_line(answerable=False, key_facts=[]),
                                   "satır 2, alan “expected”: cevaplanamaz (answerable: false) bir sorunun"),
    "unanswerable with key facts": (_line(answerable=False, expected=[]),
                                    "satır 2, alan “key_facts”: cevaplanamaz bir sorunun anahtar bilgisi"),
    "expected not a list": (_line(expected={"document": "ik.pdf"}), "satır 2, alan “expected”: bir liste olmalı"),
    "expected entry not an object": (_line(expected=["ik.pdf"]), "satır 2, alan “expected[1]”: bir nesne olmalı"),
    "expected without document": (_line(expected=[{"pages": [3]}]), "satır 2, alan “expected[1].document”: boş olamaz"),
    "document with a folder": (_line(expected=[{"document": "belgeler/ik.pdf"}]),
                               "satır 2, alan “expected[1].document”: yalnızca dosya adı"),
    "unknown expected field": (_line(expected=[{"document": "ik.pdf", "sayfa": [3]}]),
                               "satır 2, alan “expected[1]”: bilinmeyen alan(lar): sayfa"),
    "page zero": (_line(expected=[{"document": "ik.pdf", "pages": [0]}]),
                  "satır 2, alan “expected[1].pages”: sayfa numaraları 1'den başlar"),
    "page as text": (_line(expected=[{"document": "ik.pdf", "pages": ["4"]}]),
                     "satır 2, alan “expected[1].pages”: sayfa numaralarından oluşan bir liste"),
    "bad sha256": (_line(expected=[{"document": "ik.pdf", "sha256": "abc"}]),
                   "satır 2, alan “expected[1].sha256”: 64 onaltılık"),
    "key facts not strings": (_line(key_facts=[3]), "satır 2, alan “key_facts”: metinlerden oluşan bir liste"),
    "empty key fact": (_line(key_facts=["  "]), "satır 2, alan “key_facts”: boş bir anahtar bilgi"),
    "notes not text": (_line(notes=5), "satır 2, alan “notes”: metin olmalı"),
    # Caps: a pasted page (or a hostile file) never reaches the lab's tables.
    "notes too long": (_line(notes="n" * 2001), "satır 2, alan “notes”: en fazla 2000 karakter"),
    "key fact too long": (_line(key_facts=["k" * 301]), "satır 2, alan “key_facts”: bir anahtar bilgi en fazla 300"),
    "too many key facts": (_line(key_facts=[f"bilgi {i}" for i in range(21)]),
                           "satır 2, alan “key_facts”: en fazla 20 anahtar bilgi"),
    "article too long": (_line(expected=[{"document": "ik.pdf", "article": "Madde " + "9" * 100}]),
                         "satır 2, alan “expected[1].article”: en fazla 100 karakter"),
    "document name too long": (_line(expected=[{"document": "d" * 252 + ".pdf"}]),
                               "satır 2, alan “expected[1].document”: en fazla 255 karakter"),
    "too many expected documents": (_line(expected=[{"document": f"d{i}.pdf"} for i in range(21)]),
                                    "satır 2, alan “expected”: en fazla 20 beklenen belge"),
    "duplicate id": (_line(id="a0"), "satır 2, alan “id”: “a0” satır 1 ile aynı"),
}


@pytest.mark.parametrize("case", sorted(BAD_JSONL))
def test_each_bad_jsonl_row_is_named_by_line_and_field(case: str) -> None:
    bad, expected = BAD_JSONL[case]
    problems = _problems(_line(id="a0") + "\n" + bad + "\n")
    assert any(p.startswith(expected) for p in problems), (case, problems)
    assert all(p.startswith("satır 2") for p in problems), problems  # the good first line is not blamed


def test_every_problem_of_a_file_is_listed_and_blank_lines_keep_numbering() -> None:
    text = _line(id="a0") + "\n\n" + _line(id="b1", roles=["x"]) + "\n" + "{oops\n" + _line(id="a0") + "\n"
    problems = _problems(text)
    assert [p.split(",")[0].split(":")[0] for p in problems] == ["satır 3", "satır 4", "satır 5"], problems
    message = str(GoldFormatError(problems))
    assert message.startswith("Doğrulama seti dosyası içe aktarılmadı; hiçbir soru eklenmedi.")


def test_empty_file_and_unknown_format() -> None:
    assert _problems("\n\n") == ["dosyada hiç soru yok"]
    with pytest.raises(GoldFormatError, match="biçim anlaşılmadı"):
        parse_file("sorular.txt", b"id;question\n")
    with pytest.raises(GoldFormatError, match="UTF-8 değil"):
        parse_file("sorular.csv", "id,question\nä".encode("latin-1"))


def test_good_rows_parse_with_defaults_and_sanitised_text() -> None:
    minimal = {"id": "m1", "question": "Soru\x00 bu mu?", "answerable": True, "expected": [{"document": "a.pdf"}],
               "roles": ["ISG", "isg", "personel"]}
    [q] = parse_jsonl(json.dumps(minimal))
    assert q.question == "Soru bu mu?" and q.roles == ("isg", "personel") and q.key_facts == () and q.notes == ""
    assert q.expected[0].pages == () and q.expected[0].article is None
    [u] = parse_jsonl(json.dumps(UNANSWERABLE))
    assert not u.answerable and u.expected == ()


# --------------------------------------------------------------------------- CSV

HEADER = "id,question,answerable,documents,article,pages,roles,key_facts,notes\n"


BAD_CSV = {
    "bad answerable word": (HEADER + 'a1,Soru?,belki,ik.pdf,,4,ik,,\n', "satır 2, alan “answerable”: “belki” anlaşılmadı"),
    "unknown role": (HEADER + 'a1,Soru?,evet,ik.pdf,,4,muhasebe,,\n', "satır 2, alan “roles”: bilinmeyen rol"),
    "page text": (HEADER + 'a1,Soru?,evet,ik.pdf,,dört,ik,,\n', "satır 2, alan “pages”: “dört” bir sayfa numarası değil"),
    "page range backwards": (HEADER + 'a1,Soru?,evet,ik.pdf,,9-4,ik,,\n', "satır 2, alan “pages”: “9-4” geçersiz"),
    "parallel lists differ": (HEADER + 'a1,Soru?,evet,a.pdf;b.pdf,Madde 1;Madde 2;Madde 3,,ik,,\n',
                              "satır 2, alan “article”: 3 öğe var, “documents” ise 2"),
    "pages without document": (HEADER + 'a1,Soru?,evet,,,4,ik,,\n', "satır 2, alan “documents”: makale ya da sayfa"),
    "answerable without document": (HEADER + 'a1,Soru?,evet,,,,ik,,\n', "satır 2, alan “expected”: cevaplanabilir"),
    "too many cells": (HEADER + 'a1,Soru?,evet,ik.pdf,,4,ik,,,fazla\n', "satır 2: başlıktakinden fazla hücre"),
    "missing id": (HEADER + ',Soru?,evet,ik.pdf,,4,ik,,\n', "satır 2, alan “id”: boş olamaz"),
}


@pytest.mark.parametrize("case", sorted(BAD_CSV))
def test_each_bad_csv_row_is_named_by_line_and_field(case: str) -> None:
    text, expected = BAD_CSV[case]
    problems = _problems(text, parse_csv)
    assert any(p.startswith(expected) for p in problems), (case, problems)


def test_csv_header_problems() -> None:
    assert _problems("id,question\na,b\n", parse_csv)[0].startswith(
        "satır 1: eksik sütun(lar): answerable, documents, article, pages, roles, key_facts, notes")
    assert any(p.startswith("satır 1: bilinmeyen sütun(lar): sayfa")
               for p in _problems(HEADER.strip() + ",sayfa\n", parse_csv))
    assert _problems(HEADER.replace(",", ";"), parse_csv)[0].startswith("satır 1: sütunlar “;” ile ayrılmış")
    assert _problems("", parse_csv)[0].startswith("satır 1: başlık satırı yok")


def test_csv_line_numbers_count_quoted_line_breaks() -> None:
    text = HEADER + 'a1,"Iki satirlik\nsoru?",evet,ik.pdf,,4,ik,,\n' + 'a2,Soru?,evet,ik.pdf,,4,x,,\n'
    assert _problems(text, parse_csv)[0].startswith("satır 4, alan “roles”")


def test_csv_reads_lists_ranges_and_excel_bom() -> None:
    text = "\ufeff" + HEADER + ('a1,Soru?,Evet,a.pdf;b.pdf,Madde 14;,"9,10;17-18",isg;ik,üç iş günü;derhal,not\n'
                                'a2,Yok mu?,hayır,,,,personel,,\n')
    a1, a2 = parse_file("x.csv", text.encode("utf-8"))
    assert [e.document for e in a1.expected] == ["a.pdf", "b.pdf"]
    assert a1.expected[0].article == "Madde 14" and a1.expected[1].article is None
    assert a1.expected[0].pages == (9, 10) and a1.expected[1].pages == (17, 18)
    assert a1.roles == ("isg", "ik") and a1.key_facts == ("üç iş günü", "derhal")
    assert not a2.answerable and a2.expected == ()


def test_the_sample_round_trips_through_both_formats() -> None:
    data = SAMPLE.read_bytes()
    questions = parse_file(SAMPLE.name, data)
    assert len(questions) == 64 and sum(q.answerable for q in questions) == 52
    assert goldset.to_jsonl(questions).encode("utf-8") == data  # the documented field order, byte for byte
    assert parse_csv(goldset.to_csv(questions)) == questions
    assert goldset.fingerprint(questions) == goldset.fingerprint(parse_jsonl(goldset.to_jsonl(questions)))


def test_parse_pages_for_the_review_form() -> None:
    assert goldset.parse_pages("9, 11-12") == (9, 11, 12)
    assert goldset.parse_pages("") == ()
    with pytest.raises(GoldFormatError):
        goldset.parse_pages("dokuz")
