"""Training continued from an exported model, and the export's choices (eval/reader/network.py,
eval/reader/export.py).

They need torch and onnx, which `make test` does not install (run time never needs them), so they
live outside `tests/`: `make train-test` installs the training dependencies and runs them.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from eval.reader.export import REFERENCE_PAIRS
from eval.reader.network import from_e5, state_from_onnx
from eval.reader.train import init_file
from ragcore.reader import MODEL_DIR, E5Tokenizer, load_weights


def test_the_shipped_model_read_back_scores_the_reference_pairs_as_the_file_does():
    config = json.loads((MODEL_DIR / "reader.json").read_text(encoding="utf-8"))
    assert config["quantization"]["weight_bits"] == 4  # weight-only: the file itself computes in fp32
    weights = load_weights()
    net = from_e5(weights, seed=1)
    net.load_state_dict(state_from_onnx(MODEL_DIR / "reader.onnx"))
    net.eval()
    batch = E5Tokenizer(weights).encode_pairs(REFERENCE_PAIRS, max_length=config["max_length"])
    with torch.no_grad():
        logits = net(torch.from_numpy(weights.word_rows(batch.ids)), torch.from_numpy(batch.mask)).numpy()
    # The dequantized blocks in torch are the file's own weights, so its logits come back to float
    # rounding (measured: 6e-7); a wrong nibble order, zero point or transpose scores at random.
    np.testing.assert_allclose(logits, config["reference"]["logits"], atol=1e-4)


def test_init_names_the_checkpoint_before_the_model_and_refuses_an_empty_folder(tmp_path):
    (tmp_path / "reader.onnx").write_bytes(b"x")
    assert init_file(tmp_path).name == "reader.onnx"
    (tmp_path / "network.pt").write_bytes(b"x")
    assert init_file(tmp_path).name == "network.pt"
    with pytest.raises(FileNotFoundError, match="neither"):
        init_file(tmp_path / "missing")


def test_an_export_keeps_the_named_linears_in_fp32_and_quantizes_the_rest(tmp_path):
    import onnx

    from eval.reader.export import quantize
    from eval.reader.network import ReaderNetwork

    net = ReaderNetwork(hidden=8, layers=2, heads=2, intermediate=16, positions=16, eps=1e-12).eval()
    embeds, mask = torch.randn(2, 5, 8), torch.ones(2, 5, dtype=torch.int64)
    fp32 = tmp_path / "fp32.onnx"
    torch.onnx.export(net, (embeds, mask), str(fp32), input_names=["embeds", "mask"], output_names=["logits"],
                      opset_version=17, dynamo=False)
    model = tmp_path / "int8.onnx"
    quantize(fp32, model, fp32_linears=("layers.1.fo",))
    kinds = {node.name: node.op_type for node in onnx.load(str(model)).graph.node}
    assert kinds["/layers.1/fo/MatMul"] == "MatMul"  # kept
    assert kinds.get("/layers.0/fo/MatMul_quant") == "MatMulInteger"  # the same linear one layer down: int8
    assert "/layers.1/fo/MatMul_quant" not in kinds
    state, original = state_from_onnx(model), net.state_dict()  # int8 read back: one scale per tensor
    assert torch.equal(state["layers.1.fo.weight"], original["layers.1.fo.weight"])  # the fp32 one as it was
    error = (state["layers.0.fo.weight"] - original["layers.0.fo.weight"]).abs()
    assert error.max() <= 0.02 * original["layers.0.fo.weight"].abs().max()


def test_a_four_bit_export_replaces_every_linear_and_reads_back_near_the_trained_weights(tmp_path):
    import onnx

    from eval.reader.export import quantize
    from eval.reader.network import ReaderNetwork

    torch.manual_seed(0)
    net = ReaderNetwork(hidden=64, layers=2, heads=2, intermediate=128, positions=16, eps=1e-12).eval()
    with torch.no_grad():  # as after training: no norm left at its initial 1 and 0, which the export would fold
        for tensor in net.state_dict().values():
            tensor.add_(0.1 * torch.randn_like(tensor))
    embeds, mask = torch.randn(2, 5, 64), torch.ones(2, 5, dtype=torch.int64)
    fp32 = tmp_path / "fp32.onnx"
    torch.onnx.export(net, (embeds, mask), str(fp32), input_names=["embeds", "mask"], output_names=["logits"],
                      dynamic_axes={"embeds": {0: "rows", 1: "length"}, "mask": {0: "rows", 1: "length"}},
                      opset_version=17, dynamo=False)  # as the export does: no slice of the positions folded
    model = tmp_path / "nbits.onnx"
    quantize(fp32, model, weight_bits=4, block_size=32)
    kinds = [node.op_type for node in onnx.load(str(model)).graph.node]
    assert kinds.count("MatMulNBits") == 2 * 6  # q, k, v, ao, fi, fo in each layer
    state = state_from_onnx(model)
    original = net.state_dict()
    assert set(state) == set(original)
    for name in ("layers.0.q.weight", "layers.1.fi.weight", "layers.1.fo.weight"):
        error = (state[name] - original[name]).abs()
        # 4 bits per weight over a block's range: about a 30th of it; a transposed or misplaced
        # block would be off by the weights' own size.
        assert error.max() <= 0.1 * original[name].abs().max()
        assert error.mean() <= 0.2 * original[name].abs().mean()


def test_int8_compute_asks_onnxruntime_to_multiply_the_blocks_in_int8(tmp_path):
    import onnx

    from eval.reader.export import quantize
    from eval.reader.network import ReaderNetwork

    net = ReaderNetwork(hidden=64, layers=1, heads=2, intermediate=128, positions=16, eps=1e-12).eval()
    fp32 = tmp_path / "fp32.onnx"
    torch.onnx.export(net, (torch.randn(1, 5, 64), torch.ones(1, 5, dtype=torch.int64)), str(fp32),
                      input_names=["embeds", "mask"], output_names=["logits"], opset_version=17, dynamo=False)
    levels = {}
    for int8_compute in (False, True):
        model = tmp_path / f"nbits-{int8_compute}.onnx"
        quantize(fp32, model, weight_bits=4, int8_compute=int8_compute)
        levels[int8_compute] = {attribute.i for node in onnx.load(str(model)).graph.node if node.op_type == "MatMulNBits"
                                for attribute in node.attribute if attribute.name == "accuracy_level"}
    assert levels == {False: set(), True: {4}}
