"""The retrieval modes, named once: `hybrid` runs them, `measurements` refuses a measured default
that names another; the face (`ragcore.retrieval.MODES`) is what code outside imports."""

MODES = ("rrf", "weighted", "dense", "lexical")
