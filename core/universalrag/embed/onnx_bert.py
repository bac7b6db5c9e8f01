"""A BERT encoder run with ONNX Runtime: the query's forward pass without torch, ~1.6x less CPU than NumPy.

For a query of a dozen tokens, NumPy pays for ~150 separate array operations and OpenBLAS calls; ONNX Runtime
runs the same graph with fused kernels and prepacked weights, ≈ 4 ms of CPU against 7 ms for the bundled MiniLM
(``benchmarks/encoder_backends.py``), 84 % of it in the matrix products themselves (float32 peak of one core).

The graph is built here, in memory, from the same ``model.safetensors`` tensors :class:`~.numpy_bert.NumpyBert`
reads (``onnx.helper``: no torch import, and no exported file to cache or keep in step with the weights):
embeddings, post-norm self-attention layers with exact (erf) GELU, masked mean pooling and, for the router, its
head. It computes what ``transformers.BertModel`` computes in evaluation mode, in float32 (cosine ≥ 0.9999
against torch, checked in ``tests/test_onnx_inference.py``). Built ``quantized`` (``UNIVERSALRAG_ONNX_WEIGHTS=int8``,
query-time sessions only), its linear layers hold 8-bit blocks for ONNX Runtime's ``MatMulNBits``.

A query's session runs on one intra-op thread unless ``UNIVERSALRAG_ONNX_THREADS`` says otherwise (threads never
spin while they wait): a query is too small to share out, and on a two-core machine a second thread only competes
with the database. Bulk embedding (ingestion) gets a session of its own with one thread per core
(:func:`bulk_threads`), as torch would use: a batch of passages is large enough to share out.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from .numpy_bert import INFERENCE_ENV, BertWeights, inference_backend, read_bert_config, tokenize_batch

__all__ = [
    "BULK_INT8_OPS",
    "ONNX_THREADS_ENV",
    "ONNX_WEIGHTS_ENV",
    "QUANT_ACCURACY",
    "QUANT_BLOCK",
    "OnnxBert",
    "bert_graph",
    "block_quantize",
    "bulk_threads",
    "dynamic_int8_model",
    "onnx_available",
    "query_backend",
    "query_weights_quantized",
]

#: Environment variable: intra-op threads of an ONNX Runtime session (default 1).
ONNX_THREADS_ENV = "UNIVERSALRAG_ONNX_THREADS"
#: Environment variable: the weights of the query-time sessions (query embedding, router): ``float32`` (default) or
#: ``int8``. Passages are always embedded with the float32 weights.
ONNX_WEIGHTS_ENV = "UNIVERSALRAG_ONNX_WEIGHTS"

_OPSET = 20  # Gelu (exact) and LayerNormalization are standard ops from here


def onnx_available() -> bool:
    """Whether ``onnxruntime`` and ``onnx`` import (the ONNX backend can run)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def query_backend() -> str:
    """What runs a query's forward pass for a model both light backends support (see
    :func:`~.numpy_bert.numpy_supported`): ``"onnx"``, ``"numpy"`` or ``"torch"``, from ``UNIVERSALRAG_INFERENCE``
    (``auto``: ONNX Runtime when it imports, NumPy otherwise). ``onnx`` without ONNX Runtime is a
    :class:`ConfigError`."""
    choice = inference_backend()
    if choice == "auto":
        return "onnx" if onnx_available() else "numpy"
    if choice == "onnx" and not onnx_available():
        raise ConfigError(
            f"{INFERENCE_ENV}=onnx needs the packages 'onnxruntime' and 'onnx'; install them "
            "(pip install onnxruntime onnx) or set it to 'auto' or 'numpy'."
        )
    return choice


def query_weights_quantized() -> bool:
    """Whether the query-time ONNX Runtime sessions (a query's embedding, the router's pass) run on weights quantized
    to 8 bits (``UNIVERSALRAG_ONNX_WEIGHTS``: ``float32``, the default, or ``int8``; anything else is a
    :class:`ConfigError`). Passages are embedded with the float32 weights either way.

    A query's forward pass reads every weight of the encoder once for a dozen tokens: 42 MB in float32, which the
    database's searches in the same request push out of the CPU's caches; in 8-bit blocks they are a quarter of
    that. Measured on the 250 Wikipedia pages and their real questions (Intel Xeon, two cores): route + retrieve
    30.6 against 36.1 ms at p50, 7 ms less CPU per query; but the query vectors move (cosine 0.9997 on average
    with the float32 ones, 0.9989 at worst) and the router's top label changes for 0.4 % of questions, and routed
    top-5 recall on the held-out split fell from 71.2 to 70.9 % (``benchmarks/routing_e2e.py``). Recall is the
    default; the 8-bit weights are there for deployments that count milliseconds.
    """
    value = os.environ.get(ONNX_WEIGHTS_ENV, "").strip().lower() or "float32"
    if value not in ("int8", "float32"):
        raise ConfigError(f"{ONNX_WEIGHTS_ENV}={value!r} is not a weight format; use 'float32' or 'int8'.")
    return value == "int8"


#: Tensors of at least this many elements stay outside the graph's protobuf (see :class:`_Graph`).
_EXTERNAL_MIN = 1024

#: Weights of a quantized graph are stored in blocks of this many inputs, each block with its own scale ...
QUANT_BLOCK = 32
#: ... and multiplied by ONNX Runtime's ``MatMulNBits`` at this accuracy level (4: the activations are quantized to
#: 8 bits per block too and the products run on integer instructions).
QUANT_ACCURACY = 4


def block_quantize(weight: np.ndarray, block: int = QUANT_BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """A torch ``Linear`` weight ``(out, in)`` as ``MatMulNBits`` takes it with ``bits=8``: uint8 codes of shape
    ``(out, in / block, block)`` and float32 scales ``(out * in / block,)``, symmetric (code 128 is zero, the
    operator's default zero point), each block's largest magnitude at ±127."""
    out_width, in_width = weight.shape
    blocks = np.asarray(weight, dtype=np.float32).reshape(out_width, in_width // block, block)
    scales = np.abs(blocks).max(axis=2) / np.float32(127)
    scales[scales == 0] = 1.0  # an all-zero block: any scale gives codes of zero
    codes = np.clip(np.rint(blocks / scales[:, :, None]), -127, 127) + 128
    return codes.astype(np.uint8), scales.reshape(-1).astype(np.float32)


class _Graph:
    """Collects the nodes and initializers of one ONNX graph, naming values as they are made.

    Weight tensors are not copied into the protobuf: they are declared as external data and handed to ONNX
    Runtime as arrays (:attr:`external`), which makes building a session ~4x faster than serialising 90 MB.
    """

    def __init__(self, *, quantized: bool = False) -> None:
        from onnx import helper, numpy_helper

        self.quantized = quantized
        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.external: dict[str, np.ndarray] = {}
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        value = np.ascontiguousarray(value)
        if value.size < _EXTERNAL_MIN:
            self.initializers.append(self.numpy_helper.from_array(value, name))
            return name
        from onnx import TensorProto

        tensor = TensorProto(
            name=name,
            data_type=self.helper.np_dtype_to_tensor_dtype(value.dtype),
            dims=value.shape,
            data_location=TensorProto.EXTERNAL,
        )
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", "in-memory"  # never read: the session gets the array
        self.initializers.append(tensor)
        self.external[name] = value
        return name

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str, *, quantize: bool = True) -> str:
        """``x @ weight.T + bias`` for a torch ``Linear`` weight of shape ``(out, in)`` — with the weight in 8-bit
        blocks (:func:`block_quantize`, ONNX Runtime's ``MatMulNBits``) when the graph is built ``quantized`` and
        the input width is a whole number of blocks."""
        out_width, in_width = weight.shape
        if quantize and self.quantized and in_width % QUANT_BLOCK == 0:
            codes, scales = block_quantize(weight)
            product = self.op(
                "MatMulNBits",
                x,
                self.const(name + ".q8", codes),
                self.const(name + ".scales", scales),
                domain="com.microsoft",
                K=in_width,
                N=out_width,
                bits=8,
                block_size=QUANT_BLOCK,
                accuracy_level=QUANT_ACCURACY,
            )
        else:
            product = self.op("MatMul", x, self.const(name + ".wt", weight.T))
        return self.op("Add", product, self.const(name + ".b", bias))

    def layer_norm(self, x: str, weights: BertWeights, name: str, eps: float) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.const(name + ".weight", weights.get(name + ".weight")),
            self.const(name + ".bias", weights.get(name + ".bias")),
            axis=-1,
            epsilon=eps,
        )


def bert_graph(
    config: Mapping[str, Any],
    weights: BertWeights,
    *,
    head: Sequence[tuple[np.ndarray, np.ndarray]] = (),
    quantized: bool = False,
) -> tuple[Any, dict[str, np.ndarray]]:
    """The ``onnx.ModelProto`` of a BERT encoder with masked mean pooling, and its weight tensors by name
    (declared as external data in the model: pass them to the session with ``add_external_initializers``).

    Inputs ``input_ids`` and ``attention_mask`` (int64, ``(batch, length)``); output ``pooled`` (float32,
    ``(batch, hidden)``, not normalised), and ``logits`` when ``head`` is given: torch ``Linear`` layers as
    ``(weight (out, in), bias)`` with exact GELU between them (the router's head).
    """
    from onnx import TensorProto, helper

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    width = hidden // heads
    g = _Graph(quantized=quantized)
    get = weights.get

    # embeddings: word + position[:length] + token type 0, then LayerNorm
    shape = g.op("Shape", "input_ids")
    length = g.op("Gather", shape, g.const("one", np.array([1], dtype=np.int64)), axis=0)
    zero = g.const("zero", np.array([0], dtype=np.int64))
    positions = g.op(
        "Slice", g.const("position_embeddings", get("embeddings.position_embeddings.weight")), zero, length, zero
    )
    words = g.op("Gather", g.const("word_embeddings", get("embeddings.word_embeddings.weight")), "input_ids")
    type0 = get("embeddings.token_type_embeddings.weight")[0]
    x = g.op("Add", g.op("Add", words, positions), g.const("token_type_0", type0))
    x = g.layer_norm(x, weights, "embeddings.LayerNorm", eps)

    # masked keys get the dtype's minimum, as transformers' additive mask does: (1 - mask) * min
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    additive = g.op(
        "Mul",
        g.op("Sub", g.const("f_one", np.array(1.0, dtype=np.float32)), mask),
        g.const("f_min", np.array(np.finfo(np.float32).min, dtype=np.float32)),
    )
    additive = g.op("Unsqueeze", additive, g.const("axes_1_2", np.array([1, 2], dtype=np.int64)))  # (B,1,1,L)
    split_heads = g.const("split_heads", np.array([0, 0, heads, width], dtype=np.int64))
    merge_heads = g.const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.const("scale", np.array(1.0 / math.sqrt(width), dtype=np.float32))

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        att = p + "attention.self."
        per_head = []
        for part in ("query", "key", "value"):
            y = g.linear(x, get(att + part + ".weight"), get(att + part + ".bias"), att + part)
            per_head.append(g.op("Transpose", g.op("Reshape", y, split_heads), perm=[0, 2, 1, 3]))  # (B,h,L,w)
        q, k, v = per_head
        scores = g.op("MatMul", g.op("Mul", q, scale), g.op("Transpose", k, perm=[0, 1, 3, 2]))
        probs = g.op("Softmax", g.op("Add", scores, additive), axis=-1)
        context = g.op("Reshape", g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3]), merge_heads)
        out = g.linear(
            context,
            get(p + "attention.output.dense.weight"),
            get(p + "attention.output.dense.bias"),
            p + "attention.output.dense",
        )
        x = g.layer_norm(g.op("Add", out, x), weights, p + "attention.output.LayerNorm", eps)
        mid = g.op(
            "Gelu",
            g.linear(
                x, get(p + "intermediate.dense.weight"), get(p + "intermediate.dense.bias"), p + "intermediate.dense"
            ),
        )
        down = g.linear(mid, get(p + "output.dense.weight"), get(p + "output.dense.bias"), p + "output.dense")
        x = g.layer_norm(g.op("Add", down, x), weights, p + "output.LayerNorm", eps)

    # masked mean pooling: sum(x * mask) / max(sum(mask), 1e-9)
    mask3 = g.op("Unsqueeze", mask, g.const("axis_2", np.array([2], dtype=np.int64)))  # (B,L,1)
    axis1 = g.const("axis_1", np.array([1], dtype=np.int64))
    summed = g.op("ReduceSum", g.op("Mul", x, mask3), axis1, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", mask3, axis1, keepdims=0), g.const("tiny", np.array(1e-9, np.float32)))
    pooled = g.op("Div", summed, count)
    g.nodes.append(helper.make_node("Identity", [pooled], ["pooled"]))
    outputs = [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])]
    if head:
        y = pooled
        for j, (weight, bias) in enumerate(head):
            y = g.linear(y, weight, bias, f"head.{j}", quantize=False)  # a few KB: kept exact
            if j < len(head) - 1:
                y = g.op("Gelu", y)
        g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
        outputs.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", int(head[-1][1].shape[0])]))
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "length"])
        for n in ("input_ids", "attention_mask")
    ]
    graph = helper.make_graph(g.nodes, "bert", inputs, outputs, initializer=g.initializers)
    opsets = [helper.make_opsetid("", _OPSET), *([helper.make_opsetid("com.microsoft", 1)] if quantized else [])]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="universalrag")
    return model, g.external


#: The operators whose constant weights the 8-bit bulk encoder quantizes (:func:`dynamic_int8_model`): the linear
#: layers. The attention products (MatMul of two activations) stay in float32.
BULK_INT8_OPS = ("MatMul",)


def dynamic_int8_model(model: Any, external: Mapping[str, np.ndarray]) -> bytes:
    """The serialised graph of :func:`bert_graph` (float32, weights in ``external``) with its linear layers in 8 bits:
    ONNX Runtime's own ``quantize_dynamic``, weights per output channel (signed 8-bit), each call's activations
    quantized per tensor as it runs (``MatMulInteger``). Measured by ``benchmarks/bulk_int8.py`` against the float32
    bulk session; ingestion does not use it (see docs/ingestion.md for why).

    Per-tensor weights (``per_channel=False``) moved the MiniLM's passage vectors to a cosine of 0.947 on average
    with the float32 ones, per channel to 0.993 (256 passages of the test corpus), for the same speed.
    """
    import tempfile

    from onnx import numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    full = type(model)()
    full.CopyFrom(model)
    inline = [i for i in full.graph.initializer if i.name not in external]
    del full.graph.initializer[:]
    full.graph.initializer.extend(inline + [numpy_helper.from_array(np.asarray(v), k) for k, v in external.items()])
    with tempfile.TemporaryDirectory(prefix="universalrag-int8-") as folder:
        out = Path(folder) / "bulk-int8.onnx"
        quantize_dynamic(
            full, out, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=list(BULK_INT8_OPS)
        )
        return out.read_bytes()


def _threads(default: int = 1) -> int:
    value = os.environ.get(ONNX_THREADS_ENV, "").strip()
    if not value:
        return default
    try:
        threads = int(value)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ConfigError(f"{ONNX_THREADS_ENV}={value!r} is not a thread count; use a whole number ≥ 1.")
    return threads


def bulk_threads() -> int:
    """Intra-op threads of a bulk-embedding session: ``UNIVERSALRAG_ONNX_THREADS`` when set, else the cores this
    process may run on."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return _threads(default=max(1, cores))


class OnnxBert:
    """A BERT encoder (optionally with a head) in an ONNX Runtime session: token ids in, pooled vectors out.

    Build with :meth:`load` (a model directory) or the constructor (a config dict and :class:`BertWeights`);
    the session is created there, with ``threads`` intra-op threads (default: ``UNIVERSALRAG_ONNX_THREADS``, else
    1), and with ``quantized`` the encoder's linear layers in 8-bit blocks (see :func:`query_weights_quantized`), or
    with ``dynamic_int8`` in 8 bits per output channel, activations quantized as they run (:func:`dynamic_int8_model`).
    :meth:`mean_pooled` and :meth:`logits` are thread-safe (ONNX Runtime sessions
    are); the tokenizer is not, so callers serialise :meth:`tokenize`.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        weights: BertWeights,
        *,
        tokenizer: Any = None,
        head: Sequence[tuple[np.ndarray, np.ndarray]] = (),
        threads: int | None = None,
        quantized: bool = False,
        dynamic_int8: bool = False,
    ) -> None:
        import onnxruntime as ort

        self.hidden_size = int(config["hidden_size"])
        self.max_positions = int(config.get("max_position_embeddings", 512))
        self.tokenizer = tokenizer
        self.has_head = bool(head)
        if quantized and dynamic_int8:
            raise ConfigError(
                "An ONNX encoder's weights are either 8-bit blocks (quantized) or dynamic_int8, not both."
            )
        self.quantized = quantized
        self.dynamic_int8 = dynamic_int8
        model, external = bert_graph(config, weights, head=head, quantized=quantized)
        options = ort.SessionOptions()
        if threads is not None and threads < 1:
            raise ConfigError(f"An ONNX Runtime session needs at least one thread, got {threads}.")
        self.threads = threads if threads is not None else _threads()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if dynamic_int8:
            serialised = dynamic_int8_model(model, external)
        else:
            # ONNX Runtime copies external initializers while it loads the model (OrtApi::AddExternalInitializers):
            # the arrays are not kept once the session exists
            options.add_external_initializers(
                list(external), [ort.OrtValue.ortvalue_from_numpy(a) for a in external.values()]
            )
            serialised = model.SerializeToString()
        self._session = ort.InferenceSession(serialised, options, providers=["CPUExecutionProvider"])

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        overrides: Mapping[str, np.ndarray] | None = None,
        head: Sequence[tuple[np.ndarray, np.ndarray]] = (),
        threads: int | None = None,
        quantized: bool = False,
        dynamic_int8: bool = False,
    ) -> OnnxBert:
        """The encoder in ``directory`` (see :func:`~.numpy_bert.numpy_supported`: the same directories qualify),
        its tokenizer from ``tokenizer.json``; ``overrides`` replaces tensors by name, ``head`` adds layers,
        ``threads``, ``quantized`` and ``dynamic_int8`` as in the constructor."""
        from .numpy_bert import NumpyBert, numpy_supported

        path = Path(directory)
        if not numpy_supported(path):
            raise ConfigError(
                f"{str(path)!r} is not a BERT directory with model.safetensors and tokenizer.json "
                "that the ONNX backend runs; set UNIVERSALRAG_INFERENCE=torch."
            )
        weights = BertWeights.read(path / "model.safetensors")
        if overrides:
            weights = weights.with_overrides(overrides)
        return cls(
            read_bert_config(path),
            weights,
            tokenizer=NumpyBert.load_tokenizer(path),
            head=head,
            threads=threads,
            quantized=quantized,
            dynamic_int8=dynamic_int8,
        )

    def tokenize(self, texts: Sequence[str], *, max_length: int) -> tuple[np.ndarray, np.ndarray]:
        """``(input_ids, attention_mask)`` as :meth:`NumpyBert.tokenize <.numpy_bert.NumpyBert.tokenize>`."""
        if self.tokenizer is None:
            raise ConfigError("This OnnxBert was built without a tokenizer.")
        return tokenize_batch(self.tokenizer, texts, max_length=max_length)

    def _run(self, output: str, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        if input_ids.shape[1] > self.max_positions:
            raise ConfigError(f"{input_ids.shape[1]} tokens exceed the encoder's {self.max_positions} positions.")
        (out,) = self._session.run([output], {"input_ids": input_ids, "attention_mask": attention_mask})
        return out

    def mean_pooled(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """Mean of the last hidden states over real tokens, float32 ``(batch, hidden)`` (not normalised)."""
        return self._run("pooled", input_ids, attention_mask)

    def logits(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """The head's output, float32 ``(batch, labels)``; only for an encoder built with a head."""
        if not self.has_head:
            raise ConfigError("This OnnxBert was built without a head.")
        return self._run("logits", input_ids, attention_mask)
