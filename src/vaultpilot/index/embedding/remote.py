"""A remote embedder for any OpenAI-compatible ``/v1/embeddings`` endpoint.

Works with OpenAI, Ollama, llama.cpp's server, vLLM, LM Studio, LocalAI and others. Texts are
sent in batches; the answer's rows are put back in input order and L2-normalised.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from vaultpilot.errors import InvalidArgumentError
from vaultpilot.index.embedding.base import EmbeddingServiceError, Vectors, normalize_rows

__all__ = ["OpenAIEmbedder"]

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


def _endpoint(base_url: str) -> str:
    """``…/v1/embeddings`` for a base URL given with or without its ``/v1``."""
    url = base_url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise InvalidArgumentError(
            f"Embedding base URL '{base_url}' must start with http:// or https://, "
            "e.g. https://api.openai.com/v1 or http://localhost:11434/v1."
        )
    if url.endswith("/embeddings"):
        return url
    return f"{url}/embeddings" if url.endswith("/v1") else f"{url}/v1/embeddings"


def _error_detail(response: httpx.Response) -> str:
    try:
        body: Any = response.json()
    except ValueError:
        return response.text.strip()[:200]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    return str(error or body)[:200]


class OpenAIEmbedder:
    """Embeds texts through ``POST {base_url}/v1/embeddings``.

    ``dimension``, when given, is checked against every answer; otherwise it is learnt from the
    first answer (reading ``dimension`` before any ``embed`` call sends one short probe).
    Failures raise ``EmbeddingServiceError`` with the URL and the server's own message.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dimension: int | None = None,
        *,
        batch_size: int = 64,
        timeout: float = 60.0,
        retries: int = 2,
        client: httpx.Client | None = None,
    ) -> None:
        if not model:
            raise InvalidArgumentError("An embedding model name is required.")
        if batch_size < 1 or retries < 0 or (dimension is not None and dimension < 1):
            raise InvalidArgumentError("batch_size and dimension must be >= 1, retries >= 0.")
        self.url = _endpoint(base_url)
        self.model = model
        self.batch_size = batch_size
        self.retries = retries
        self._dimension = dimension
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(timeout=timeout)
        self._headers = headers

    @property
    def model_name(self) -> str:
        """The remote model's name, as the server knows it."""
        return self.model

    @property
    def dimension(self) -> int:
        """The vectors' length (asks the server once if it was not given)."""
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 row per text, in order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        parts = [
            self._post_batch(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        return normalize_rows(np.concatenate(parts, axis=0))

    def _post_batch(self, texts: list[str]) -> Vectors:
        # Many servers refuse empty strings; a space embeds as "nothing" just as well.
        payload = {
            "model": self.model,
            "input": [t if t.strip() else " " for t in texts],
            "encoding_format": "float",
        }
        response = self._send(payload)
        try:
            data = response.json()["data"]
            rows = sorted(data, key=lambda item: int(item.get("index", 0)))
            vectors = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise EmbeddingServiceError(
                f"The embedding server at {self.url} answered without a valid 'data' list of "
                "embeddings. Is it OpenAI-compatible?"
            ) from None
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise EmbeddingServiceError(
                f"The embedding server at {self.url} returned {vectors.shape[0]} vectors for "
                f"{len(texts)} texts."
            )
        if self._dimension is None:
            self._dimension = int(vectors.shape[1])
        elif vectors.shape[1] != self._dimension:
            raise EmbeddingServiceError(
                f"The embedding server at {self.url} returned {vectors.shape[1]}-dimensional "
                f"vectors for model '{self.model}'; {self._dimension} were expected."
            )
        return vectors

    def _send(self, payload: dict[str, Any]) -> httpx.Response:
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._client.post(self.url, json=payload, headers=self._headers)
            except httpx.HTTPError as err:
                if not last:
                    time.sleep(0.5 * 2**attempt)
                    continue
                raise EmbeddingServiceError(
                    f"Could not reach the embedding server at {self.url} "
                    f"({type(err).__name__}: {err}). Check the base URL and that it is running."
                ) from None
            if response.status_code in _RETRY_STATUSES and not last:
                time.sleep(0.5 * 2**attempt)
                continue
            if response.status_code >= 400:
                hint = " Check the API key." if response.status_code in (401, 403) else ""
                raise EmbeddingServiceError(
                    f"The embedding server at {self.url} answered HTTP {response.status_code}: "
                    f"{_error_detail(response)}.{hint}"
                )
            return response
        raise AssertionError("unreachable")
