"""The shipped reader model: its scores are the ones written at export, a damaged file is refused
at load, and it re-orders candidates and decides the outcome from the real model file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragcore.answer.reading import ANSWER, CLOSEST, REFUSED, ReaderCuts, read
from ragcore.core import Settings, Source
from ragcore.reader import MODEL_DIR, Reader, ReaderModelError, loaded_reader, shipped_reader

LAW = "İş Kanunu (4857)"
MATERNITY = ("MADDE 74 – (1) Kadın işçilerin doğumdan önce sekiz ve doğumdan sonra sekiz hafta olmak üzere "
             "toplam onaltı haftalık süre için çalıştırılmamaları esastır. Çoğul gebelik halinde doğumdan önce "
             "çalıştırılmayacak sekiz haftalık süreye iki hafta süre eklenir.")
TWINS_FIRST = ("MADDE 74 – (1) Çoğul gebelik halinde doğumdan önce çalıştırılmayacak sekiz haftalık süreye iki hafta "
               "süre eklenir. Ancak sağlık durumu uygun olduğu takdirde, doktorun onayı ile kadın işçi isterse "
               "doğumdan önceki üç haftaya kadar işyerinde çalışabilir.")
ANNUAL_LEAVE = ("MADDE 53 – İşçilere verilecek yıllık ücretli izin süresi, hizmet süresi; a) Bir yıldan beş yıla kadar "
                "(beş yıl dahil) olanlara ondört günden, b) Beş yıldan fazla onbeş yıldan az olanlara yirmi günden, "
                "c) Onbeş yıl (dahil) ve daha fazla olanlara yirmialtı günden az olamaz.")


@pytest.fixture(scope="module")
def reader() -> Reader:
    return shipped_reader()


def source(rank: int, text: str, article: str) -> Source:
    return Source(rank=rank, chunk_id=rank, document_id=1, title=LAW, filename="4857-is-kanunu.pdf",
                  page_start=1, page_end=1, article=article, score=1.0, text=text)


def test_scores_equal_the_reference_written_at_export(reader: Reader) -> None:
    reference = reader.config["reference"]
    logits = reader.logits([tuple(pair) for pair in reference["pairs"]])
    np.testing.assert_allclose(logits, reference["logits"], atol=2e-3)
    # The reference pairs include a right and a wrong passage for one question: the model tells them apart.
    assert logits[0] > logits[1]


def test_the_config_records_provenance_and_cuts(reader: Reader) -> None:
    config = reader.config
    assert config["training"]["code"]["dirty"] is False
    assert config["cuts"]["chosen_on"]["code"]["dirty"] is False
    assert 0.0 < config["cuts"]["closest"] <= config["cuts"]["answer"] <= 1.0
    assert 0.0 <= reader.fusion_weight <= 1.0
    assert (MODEL_DIR / "MODEL_CARD.md").is_file()


def test_a_wrong_first_passage_moves_down(reader: Reader) -> None:
    question = "Hamileyim, doğumdan önce kaç hafta izin kullanabilirim?"
    reading = read(reader, question, [source(1, ANNUAL_LEAVE, "Madde 53"), source(2, MATERNITY, "Madde 74")])
    assert [s.article for s in reading.sources] == ["Madde 74", "Madde 53"]
    assert [s.rank for s in reading.sources] == [1, 2]
    assert "sekiz ve doğumdan sonra sekiz hafta" in reading.windows[0]
    assert reading.scores[0] > reading.scores[1]


def test_the_outcomes_follow_the_shipped_cuts(reader: Reader) -> None:
    """The model file's cut pair on the model's own scores: a window that answers earns at least
    the closest passages (an answer at or above the answer cut), and the refusal is below the
    closest cut."""
    cuts = ReaderCuts.of(reader)
    leave = read(reader, "Yıllık izin kaç gün, 3 yıldır çalışıyorum?", [source(1, ANNUAL_LEAVE, "Madde 53")])
    assert leave.top >= cuts.closest and cuts.outcome(leave.top) == (ANSWER if leave.top >= cuts.answer else CLOSEST)
    assert cuts.outcome(cuts.closest) == CLOSEST and cuts.outcome(cuts.answer) == ANSWER
    assert cuts.outcome(cuts.closest - 1e-6) == REFUSED
    assert cuts.outcome(cuts.closest, llm=True) == ANSWER  # a language model reads every passage it is given


def copy_model(tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(MODEL_DIR, target)
    return target


def test_a_missing_model_file_is_refused_at_load(tmp_path: Path) -> None:
    model = copy_model(tmp_path)
    (model / "reader.onnx").unlink()
    with pytest.raises(ReaderModelError, match="Okuyucu model dosyası yok"):
        Reader(model)


def test_a_damaged_model_file_is_refused_at_load(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model = copy_model(tmp_path)
    data = bytearray((model / "reader.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (model / "reader.onnx").write_bytes(bytes(data))
    with pytest.raises(ReaderModelError, match="bozuk ya da değiştirilmiş") as refused:
        Reader(model)
    assert str(model) not in str(refused.value)  # the user's message names no path ...
    assert str(model / "reader.onnx") in caplog.text  # ... the log does


def test_a_damaged_config_is_refused_at_load(tmp_path: Path) -> None:
    model = copy_model(tmp_path)
    (model / "reader.json").write_text("{", encoding="utf-8")
    with pytest.raises(ReaderModelError, match="okunamadı"):
        Reader(model)
    config = json.loads((MODEL_DIR / "reader.json").read_text(encoding="utf-8"))
    config["onnx_sha256"] = "0" * 64
    (model / "reader.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ReaderModelError, match="bozuk"):
        Reader(model)


def test_reader_model_dir_loads_another_model_and_names_it(tmp_path: Path, reader: Reader) -> None:
    """A company's own reader (or a lab run's) is loaded from READER_MODEL_DIR under the same hash
    check, with its own cuts; `describe` names its folder and hash, so a run card measured with it
    says which model it read with."""
    model = copy_model(tmp_path)
    config = json.loads((model / "reader.json").read_text(encoding="utf-8"))
    config["cuts"] = {**config["cuts"], "answer": 0.97, "closest": 0.11}
    (model / "reader.json").write_text(json.dumps(config), encoding="utf-8")
    settings = Settings.from_env({"READER_MODEL_DIR": str(model), "ANSWER_POLICY": "reader"}, dotenv=None)
    other = loaded_reader(settings.reader_model_dir)
    assert other is not reader and loaded_reader(settings.reader_model_dir) is other
    assert other.describe()["model"] == str(model) and reader.describe()["model"] == "shipped"
    assert other.describe()["onnx_sha256"] == reader.describe()["onnx_sha256"] == config["onnx_sha256"]
    assert ReaderCuts.of(other) == ReaderCuts(0.97, 0.11) != ReaderCuts.of(reader)
    assert loaded_reader(None) is shipped_reader() is reader
