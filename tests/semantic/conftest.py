"""Fixtures for the semantic-search tests: a tiny deterministic embedder, the real model when it
is built, and indexed copies of the example vault.

``HashEmbedder`` is a real (if weak) embedding model, not a stand-in for one of our modules: it
hashes words into 64 buckets, so texts sharing words get similar unit vectors. It keeps the
logic tests (incremental re-embedding, model change, interruption) fast and independent of the
built model; tests of ranking quality use the real all-MiniLM-L6-v2 and skip when it is absent.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from vaultpilot.index.db import connect
from vaultpilot.index.embedding import EmbeddingModelMissing, OnnxEmbedder, load_default_embedder
from vaultpilot.index.embedding.base import Vectors
from vaultpilot.index.semantic import embed_pending
from vaultpilot.index.sync import sync_vault
from vaultpilot.index.vectors import VectorCache

EXAMPLE_VAULT = Path(__file__).resolve().parents[2] / "examples" / "vault"


class HashEmbedder:
    """Bag of hashed words, 64 dimensions, unit rows; records every text it embeds."""

    def __init__(self, name: str = "test/hash-64", dimension: int = 64) -> None:
        self._name = name
        self._dimension = dimension
        self.seen: list[str] = []
        self.calls = 0

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        self.seen.extend(texts)
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self._dimension] += 1.0
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-12)
        return out


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def indexed(example_vault: Path, tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A synced (not yet embedded) index of a writable copy of the example vault."""
    conn = connect(tmp_path / "data" / "index.db")
    sync_vault(conn, example_vault)
    yield conn
    conn.close()


@pytest.fixture(scope="session")
def real_embedder() -> OnnxEmbedder:
    try:
        return load_default_embedder()
    except EmbeddingModelMissing as err:
        pytest.skip(f"the offline model is not built ({err})")


class Embedded:
    """The example vault, indexed and embedded once with the real model (read-only use)."""

    def __init__(self, root: Path, embedder: OnnxEmbedder) -> None:
        self.vault = root / "vault"
        shutil.copytree(EXAMPLE_VAULT, self.vault)
        self.conn = connect(root / "index.db")
        sync_vault(self.conn, self.vault)
        embed_pending(self.conn, embedder)
        self.embedder = embedder
        self.cache = VectorCache()


@pytest.fixture(scope="session")
def embedded(tmp_path_factory: pytest.TempPathFactory, real_embedder: OnnxEmbedder) -> Embedded:
    return Embedded(tmp_path_factory.mktemp("embedded"), real_embedder)
