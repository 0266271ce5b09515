"""MNN engine: Whisper exported to MNN and run through MNN's Python package.

``runtime`` (settings, checks, module loading), ``graph`` (exportable torch graphs), ``export``
(ONNX -> MNN, cached per weights hash), ``whisper`` (Target / decoder session / producer on MNN).
"""
