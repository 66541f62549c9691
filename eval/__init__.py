"""Evaluation lab: TQuAD retrieval sweeps and answer evaluation (CLI `python -m eval`, page eval_lab).

Never imports streamlit; the page `pages/eval_lab.py` is a thin layer over these modules.
"""
