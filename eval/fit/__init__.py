"""`python -m eval fit <name> …`: the tools that write ragcore/measured/*.json.

    fit retrieval   the fusion mode and dense weight per embedder (retrieval.json)
    fit threshold   the refusal threshold per embedder (thresholds.json)
    fit abstention  the three-outcome gate per embedder (abstention.json)
    fit extractive  the extractive answerer's sentence model (extractive.json)

Each module has `add_arguments(parser)` and `run(args, settings) -> int`; their common set-up
(the app's database with its embedding cache, a cached embedder, the sample laws' index, the
everyday set's split) is `eval.fit.setup`.
"""

from __future__ import annotations

import argparse
import importlib

from eval.fit.setup import subset

# name → module (add_arguments, run).
FITS = {
    "retrieval": "eval.fit.retrieval",
    "threshold": "eval.fit.threshold",
    "abstention": "eval.fit.abstention",
    "extractive": "eval.fit.extractive",
}

__all__ = ["FITS", "register", "subset"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add `fit` and one subcommand per fitting tool, each with its module's own arguments."""
    fit = sub.add_parser("fit", help="fit what ragcore/measured holds (retrieval weight, threshold, gate, reader)")
    tools = fit.add_subparsers(dest="fit_command", required=True)
    for name, path in FITS.items():
        module = importlib.import_module(path)
        doc = module.__doc__ or name
        p = tools.add_parser(name, help=doc.splitlines()[0], description=doc,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(func=module.run)
