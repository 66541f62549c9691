"""One-off measurements whose results were written into the code by hand, kept so that their run
cards can be reproduced: `python -m eval.experiments.<name> --help`.

    fusion_tuning      the fusion's candidate depth and the transitional-article weight
                       (ragcore.retrieval.hybrid.FUSION; docs/eval_runs/fusion-e5.json)
    heading_fields     article headings and the title as fields of the lexical leg
                       (docs/eval_runs/heading-fields.json)
    rerank_experiment  a learned reranker against the single fusion weight (measured, not adopted)

Nothing in the app imports them.
"""

__all__: list[str] = []
