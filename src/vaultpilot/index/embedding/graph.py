"""Build an ONNX graph of a BERT sentence encoder straight from its safetensors weights.

No torch and no export step: the graph is written node by node with ``onnx.helper``, using
onnxruntime's fused contrib operators (``EmbedLayerNormalization``, ``Attention``,
``SkipLayerNormalization``, ``BiasGelu``) so that the fast CPU kernels run without relying on a
pattern-matching optimiser. The head mean-pools the last hidden state over the attention mask
and L2-normalises, which is what sentence-transformers does for all-MiniLM-L6-v2.

Inputs: ``input_ids`` and ``attention_mask``, int32 ``[batch, seq]``, right-padded.
Output: ``sentence_embedding``, float32 ``[batch, hidden]``, unit rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["BertShape", "build_bert_graph"]

_MS = "com.microsoft"
_OPSET = 17

Weights = dict[str, npt.NDArray[np.generic]]


@dataclass(frozen=True)
class BertShape:
    """The few numbers of a BERT config that the graph depends on."""

    num_layers: int
    num_heads: int
    hidden_size: int
    layer_norm_eps: float


class _Builder:
    def __init__(self, weights: Weights) -> None:
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()

    def const(self, name: str, value: npt.NDArray[np.generic]) -> str:
        if name in self._names:
            raise ValueError(f"duplicate initializer {name}")
        self._names.add(name)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(self, key: str, *, transpose: bool = False) -> npt.NDArray[np.float32]:
        value = np.asarray(self.weights[key], dtype=np.float32)
        return value.T.copy() if transpose else value

    def linear_weight(self, name: str, key: str) -> str:
        """The ``[in, out]`` weight of the HF linear layer ``key`` as initializer ``name``."""
        return self.const(name, self.weight(f"{key}.weight", transpose=True))

    def node(
        self, op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs: Any
    ) -> None:
        name = f"{op}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, inputs, outputs, name, domain=domain, **attrs))


def build_bert_graph(weights: Weights, shape: BertShape) -> onnx.ModelProto:
    """The fp32 sentence-embedding graph for a BERT checkpoint (HF ``BertModel`` key names).

    Linear layers are plain ``MatMul`` (or the ``Attention`` input projection) with constant
    weights, ready for ``onnxruntime.quantization.quantize_dynamic``.
    """
    b = _Builder(weights)
    eps = float(shape.layer_norm_eps)
    hidden = shape.hidden_size

    def w(key: str, *, transpose: bool = False) -> npt.NDArray[np.float32]:
        return b.weight(key, transpose=transpose)

    # Token types are always 0 for single sentences, so fold that row into the position table.
    positions = w("embeddings.position_embeddings.weight")
    token_type = w("embeddings.token_type_embeddings.weight")[0]
    b.node(
        "EmbedLayerNormalization",
        [
            "input_ids",
            "",
            b.const("word_embeddings", w("embeddings.word_embeddings.weight")),
            b.const("position_embeddings", positions + token_type[None, :]),
            "",
            b.const("emb_ln_gamma", w("embeddings.LayerNorm.weight")),
            b.const("emb_ln_beta", w("embeddings.LayerNorm.bias")),
            "attention_mask",
        ],
        ["hidden_0", "mask_index"],
        domain=_MS,
        epsilon=eps,
    )

    def skip_norm(x: str, skip: str, key: str, bias_key: str, out: str) -> None:
        gamma = b.const(f"{out}_gamma", w(f"{key}.weight"))
        beta = b.const(f"{out}_beta", w(f"{key}.bias"))
        bias = b.const(f"{out}_bias", w(f"{bias_key}.bias"))
        b.node("SkipLayerNormalization", [x, skip, gamma, beta, bias], [out], _MS, epsilon=eps)

    current = "hidden_0"
    for i in range(shape.num_layers):
        p = f"encoder.layer.{i}."
        n = f"l{i}_"
        qkv = [f"{p}attention.self.{part}" for part in ("query", "key", "value")]
        qkv_w = np.concatenate([w(f"{k}.weight", transpose=True) for k in qkv], axis=1)
        qkv_b = b.const(f"{n}qkv_b", np.concatenate([w(f"{k}.bias") for k in qkv]))
        b.node(
            "Attention",
            [current, b.const(f"{n}qkv_w", qkv_w), qkv_b, "mask_index"],
            [f"{n}ctx"],
            _MS,
            num_heads=shape.num_heads,
        )
        out_w = b.linear_weight(f"{n}attn_out_w", f"{p}attention.output.dense")
        b.node("MatMul", [f"{n}ctx", out_w], [f"{n}attn_proj"])
        key = f"{p}attention.output"
        skip_norm(f"{n}attn_proj", current, f"{key}.LayerNorm", f"{key}.dense", f"{n}attn_norm")
        up_w = b.linear_weight(f"{n}ffn_up_w", f"{p}intermediate.dense")
        b.node("MatMul", [f"{n}attn_norm", up_w], [f"{n}ffn_up"])
        up_b = b.const(f"{n}ffn_up_b", w(f"{p}intermediate.dense.bias"))
        b.node("BiasGelu", [f"{n}ffn_up", up_b], [f"{n}ffn_act"], _MS)
        down_w = b.linear_weight(f"{n}ffn_down_w", f"{p}output.dense")
        b.node("MatMul", [f"{n}ffn_act", down_w], [f"{n}ffn_down"])
        current = f"hidden_{i + 1}"
        skip_norm(
            f"{n}ffn_down", f"{n}attn_norm", f"{p}output.LayerNorm", f"{p}output.dense", current
        )

    # Mean pooling over real tokens, then L2 normalisation.
    b.node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT)
    b.node("Unsqueeze", ["mask_f", b.const("axis_2", np.array([2], dtype=np.int64))], ["mask_3d"])
    b.node("Mul", [current, "mask_3d"], ["masked"])
    axis_1 = b.const("axis_1", np.array([1], dtype=np.int64))
    b.node("ReduceSum", ["masked", axis_1], ["summed"], keepdims=0)
    b.node("ReduceSum", ["mask_f", axis_1], ["count"], keepdims=1)
    b.node("Max", ["count", b.const("one", np.array(1.0, dtype=np.float32))], ["count_safe"])
    b.node("Div", ["summed", "count_safe"], ["mean"])
    b.node("ReduceL2", ["mean"], ["norm"], axes=[1], keepdims=1)
    b.node("Max", ["norm", b.const("tiny", np.array(1e-12, dtype=np.float32))], ["norm_safe"])
    b.node("Div", ["mean", "norm_safe"], ["sentence_embedding"])

    outputs = [
        helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])
    ]
    graph = helper.make_graph(
        b.nodes,
        "sentence_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT32, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT32, ["batch", "seq"]),
        ],
        outputs,
        b.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(_MS, 1)],
        producer_name="vaultpilot",
    )
    model.ir_version = 8
    return model
