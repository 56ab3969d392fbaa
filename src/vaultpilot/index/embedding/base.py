"""What every text embedder offers, the errors embedding raises, and the default model's facts."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from vaultpilot.errors import ExternalError, SetupError

__all__ = [
    "DEFAULT_DIMENSION",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL_NAME",
    "MODEL_DIR_ENV",
    "Embedder",
    "EmbeddingModelMissing",
    "EmbeddingServiceError",
    "Vectors",
    "build_command",
    "default_model_dir",
    "normalize_rows",
]

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DIMENSION = 384
DEFAULT_MAX_TOKENS = 256
MODEL_DIR_ENV = "VAULTPILOT_EMBEDDING_MODEL_DIR"
_MODEL_SUBDIR = ("share", "vaultpilot", "models", "all-MiniLM-L6-v2")

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors; the same text always gives the same row."""

    @property
    def model_name(self) -> str:
        """The model's name as recorded in an index, so vectors of two models never mix."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised float32 row per text, in order; shape ``(len(texts), dimension)``."""
        ...


class EmbeddingModelMissing(SetupError):
    """The offline embedding model has not been built (or its runtime is not installed)."""


class EmbeddingServiceError(ExternalError):
    """A remote embedding server could not be reached or answered with an error."""


def default_model_dir() -> Path:
    """Where the built model lives: ``$VAULTPILOT_EMBEDDING_MODEL_DIR``, else inside the
    Python environment (``<sys.prefix>/share/vaultpilot/models/all-MiniLM-L6-v2``), so a
    fresh environment builds its own and removing the environment removes it."""
    override = os.environ.get(MODEL_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path(sys.prefix).joinpath(*_MODEL_SUBDIR)


def build_command(dest: Path | None = None) -> str:
    """The shell command that builds the model, for messages."""
    command = "python -m vaultpilot.index.embedding build"
    if dest is not None and dest != default_model_dir():
        command += f" --dest '{dest}'"
    return command


def normalize_rows(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (all-zero rows stay zero), as contiguous float32."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.ascontiguousarray(array / np.maximum(norms, np.float32(1e-12)), dtype=np.float32)
