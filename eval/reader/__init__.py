"""The reader's lab side: its training pairs (`data`), the torch network (`network`), training
(`train`) and the int8 ONNX export (`export`); `python -m eval reader …` (`cli`). torch and
onnx are dev dependencies (requirements-train.txt), imported only by training and export."""
