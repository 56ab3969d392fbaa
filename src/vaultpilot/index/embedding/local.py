"""The offline default embedder: all-MiniLM-L6-v2 as an int8 ONNX graph on onnxruntime's CPU.

Load it with ``load_default_embedder()``; build it first with ``build_model`` (``python -m
vaultpilot.index.embedding build``). Texts are tokenised with the model's own WordPiece
tokenizer and truncated at ``max_tokens`` (256) tokens. Vectors are mean-pooled and
L2-normalised inside the graph.

Each text runs alone on one core, and ``threads`` texts run at once on a shared session. On two
cores this is faster than padded batches with intra-op threads (about 90 vs 80 chunks/s of 256
tokens, 1.5-2x for short texts), and it makes every vector a function of its text only: int8
dynamic quantisation picks its activation scale per run, so in a padded batch a text's vector
would depend on its batch mates (cosine 0.996 to itself embedded alone). Here the same text gives
the same bytes whatever the batch, the order or the thread count.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from vaultpilot.index.embedding.base import (
    DEFAULT_DIMENSION,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL_NAME,
    EmbeddingModelMissing,
    Vectors,
    build_command,
    default_model_dir,
)
from vaultpilot.index.embedding.build import MODEL_FILE, TOKENIZER_FILE, read_manifest

__all__ = ["OnnxEmbedder", "load_default_embedder"]

DEFAULT_THREADS = 2
_SLICE = 512


def _require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise EmbeddingModelMissing(
            f"The offline embedder needs the package {module}, which is not installed. "
            "Reinstall vaultpilot with its dependencies (in a checkout, `make run` does)."
        ) from None


class OnnxEmbedder:
    """Embeds texts with a model folder written by ``build_model``.

    ``threads`` texts are embedded at once, each on one core (default 2). Longer texts are
    truncated to ``max_tokens`` tokens (at most 256, the model's training length). Thread-safe:
    ``embed`` may be called from several threads.

    The tokenizer and the ONNX session (~110 MB) are loaded on the first ``embed`` or
    ``token_counts``, not when the embedder is made: a process that only needs the model's name
    (a search of a vault with nothing embedded yet) never loads them. A file that cannot be
    loaded then raises ``EmbeddingModelMissing`` saying how to rebuild it.
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        threads: int = DEFAULT_THREADS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        if threads < 1 or not 2 <= max_tokens <= DEFAULT_MAX_TOKENS:
            raise ValueError("threads must be >= 1 and max_tokens in 2..256")
        manifest = read_manifest(model_dir) or {}
        self._model_name = str(manifest.get("model_name", DEFAULT_MODEL_NAME))
        self._dimension = int(manifest.get("dimension", DEFAULT_DIMENSION))
        self.max_tokens = max_tokens
        self.threads = threads
        self._dir = model_dir
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None  # (tokenizer, session), on first use

    def _model(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                try:
                    self._loaded = self._load()
                except EmbeddingModelMissing:
                    raise
                except Exception as err:  # onnxruntime raises its own types for a corrupt file
                    raise EmbeddingModelMissing(
                        f"The embedding model in {self._dir} could not be loaded "
                        f"({type(err).__name__}). Rebuild it with "
                        f"`{build_command(self._dir)} --force`."
                    ) from None
            return self._loaded

    def _load(self) -> tuple[Any, Any]:
        tokenizers = _require("tokenizers")
        ort = _require("onnxruntime")
        tokenizer = tokenizers.Tokenizer.from_file(str(self._dir / TOKENIZER_FILE))
        tokenizer.enable_truncation(self.max_tokens)
        tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # parallelism is across texts, see the module doc
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        session = ort.InferenceSession(
            str(self._dir / MODEL_FILE), options, providers=["CPUExecutionProvider"]
        )
        return tokenizer, session

    @property
    def model_name(self) -> str:
        """``sentence-transformers/all-MiniLM-L6-v2``."""
        return self._model_name

    @property
    def dimension(self) -> int:
        """384."""
        return self._dimension

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """How many tokens each text has, special tokens included, after truncation."""
        tokenizer, _ = self._model()
        return [len(e.ids) for e in tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 row per text, in order (an empty input gives ``(0, 384)``)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        tokenizer, session = self._model()

        def run(row: int, ids: list[int]) -> None:
            tokens = np.asarray([ids], dtype=np.int32)
            feeds = {"input_ids": tokens, "attention_mask": np.ones_like(tokens)}
            out[row] = session.run(None, feeds)[0][0]

        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="embed")
        try:
            # Tokenise a slice at a time so that huge inputs do not hold every encoding at once.
            for start in range(0, len(texts), _SLICE):
                encodings = tokenizer.encode_batch(list(texts[start : start + _SLICE]))
                ids = [e.ids for e in encodings]
                # Longest first, so the last to finish are short and both cores stay busy.
                order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
                if self.threads == 1 or len(order) == 1:
                    for i in order:
                        run(start + i, ids[i])
                else:
                    rows = [start + i for i in order]
                    for _ in pool.map(run, rows, [ids[i] for i in order]):
                        pass
        finally:
            pool.shutdown()
        return out


def load_default_embedder(
    model_dir: Path | None = None,
    *,
    threads: int = DEFAULT_THREADS,
) -> OnnxEmbedder:
    """The offline all-MiniLM-L6-v2 embedder from ``model_dir`` (default ``default_model_dir()``).

    Raises ``EmbeddingModelMissing`` with the command that builds it when the folder holds no
    complete build.
    """
    folder = (model_dir or default_model_dir()).expanduser()
    manifest = read_manifest(folder)
    missing = [n for n in (MODEL_FILE, TOKENIZER_FILE) if not (folder / n).is_file()]
    if manifest is None or missing:
        raise EmbeddingModelMissing(
            f"The offline embedding model is not built in {folder}. Build it with "
            f"`make install-model` or `{build_command(model_dir)}` (takes a few seconds, "
            "no network needed)."
        )
    if (folder / MODEL_FILE).stat().st_size != manifest.get("model_bytes"):
        raise EmbeddingModelMissing(
            f"The embedding model in {folder} is incomplete or was changed. Rebuild it with "
            f"`{build_command(model_dir)} --force`."
        )
    return OnnxEmbedder(folder, threads=threads)  # loaded on first use (see the class)
