"""One frozen config object per model: every architectural choice the explorer can show."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from model.config_checks import check_deltanet, check_layer_kinds, check_layer_shapes
from model.positional import PositionalKind, UnknownKind, kind_of

Architecture = Literal["decoder", "encoder", "encoder-decoder"]
PosEncoding = str  # a name in model.positional.KINDS (checked in __post_init__ by the kind itself)
NormKind = Literal["layernorm", "rmsnorm"]
NormPlacement = Literal["pre", "post"]
Activation = Literal["relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu", "geglu_tanh", "reglu"]

ARCHITECTURES: tuple[str, ...] = ("decoder", "encoder", "encoder-decoder")
NORMS: tuple[str, ...] = ("layernorm", "rmsnorm")
NORM_PLACEMENTS: tuple[str, ...] = ("pre", "post")
ACTIVATIONS: tuple[str, ...] = ("relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu", "geglu_tanh", "reglu")
# gated FFNs: W_out · (act(W_gate · x) ⊙ W_in · x), named by the activation on the gate
GATED_ACTIVATIONS: dict[str, str] = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh", "reglu": "relu"}


# options only some families have (Llama 3.1's RoPE scaling, Qwen3's q/k norm), with their default
OPTIONAL_FIELDS: dict[str, Any] = {"rope_freq_factors": None, "qk_norm": False}
# Gemma 2 / Gemma 3's options, and a head size of its own (Qwen3-0.6B, Gemma): optional in the same way
OPTIONAL_FIELDS.update({"head_dim": None, "post_norms": False, "attn_softcap": None, "logit_softcap": None,
                        "score_scale_dim": None, "rope_base_local": None})
# Phi-3 / Phi-4-mini: partial rotary and longrope (a second factor set past an original context, cos and sin scaled)
OPTIONAL_FIELDS.update({"rope_dims": None, "rope_long_freq_factors": None, "rope_original_context": None,
                        "rope_attention_factor": 1.0})
# Gemma 4: global layers' own head sizes, K/V shared across layers, K = V, v norm, per-layer widths and inputs
OPTIONAL_FIELDS.update({"head_dim_global": None, "kv_heads_global": None, "kv_source": None, "k_eq_v": False,
                        "v_norm": False, "mlp_widths": None, "per_layer_input": None, "layer_scalar": False})
# SmolLM3's layers without positions, and a mixture of experts (Qwen3-MoE): optional in the same way
OPTIONAL_FIELDS.update({"nope_layers": None, "n_experts": 0, "n_experts_used": 0, "expert_d_mlp": None,
                        "moe_layers": None, "expert_norm_topk": False, "shared_expert_d_mlp": None,
                        "experts_beside_mlp": False})
# Qwen3.5: gated DeltaNet layers (model/deltanet.py) between full-attention layers whose output is gated
OPTIONAL_FIELDS.update({"deltanet_layers": None, "deltanet_key_heads": None, "deltanet_value_heads": None,
                        "deltanet_key_dim": None, "deltanet_value_dim": None, "deltanet_conv": None,
                        "attn_output_gate": False})


class ConfigError(ValueError):
    """A configuration that cannot describe a working Transformer."""


@dataclass(frozen=True)
class TransformerConfig:
    """Everything that fixes a model's shape and math.

    Dimension words used everywhere (shape comments, trace dims, API):
    batch, pos, d_model, head, kv_head, d_head, q_pos, k_pos, d_mlp, d_vocab.
    """

    architecture: Architecture = "decoder"
    vocab_size: int = 256
    d_model: int = 64
    n_layers: int = 2
    n_decoder_layers: int | None = None  # encoder-decoder only; None -> n_layers
    n_heads: int = 4
    n_kv_heads: int | None = None  # None -> n_heads (MHA); 1 -> MQA; between -> GQA
    # each head's width: None -> d_model // n_heads (d_model must divide); given -> W_Q is [d_model -> head·d_head]
    # and W_O [head·d_head -> d_model] (Qwen3-0.6B, Gemma: 128 or 256 wide heads whatever d_model is)
    head_dim: int | None = None
    d_mlp: int | None = None  # None -> 4 * d_model
    n_ctx: int = 512  # longest sequence (learned positions, RoPE/ALiBi caches)
    pos_encoding: PosEncoding = "sinusoidal"
    rope_base: float = 10000.0
    # RoPE scaling: pair i turns rope_freq_factors[i] times slower (llama.cpp's rope_freqs; Llama 3.1's "llama3"
    # scaling, or "linear": every factor equal); None -> unscaled
    rope_freq_factors: tuple[float, ...] | None = None
    rope_dims: int | None = None  # partial rotary: only the first rope_dims of each head turn; None -> d_head
    # longrope (Phi-3): rope_freq_factors while the sequence is at most rope_original_context long, these past it
    rope_long_freq_factors: tuple[float, ...] | None = None
    rope_original_context: int | None = None
    rope_attention_factor: float = 1.0  # the rotated dimensions are multiplied by this (longrope's cos/sin scale)
    norm: NormKind = "layernorm"
    norm_placement: NormPlacement = "pre"
    norm_eps: float = 1e-5
    qk_norm: bool = False  # RMSNorm over each head's q and k (own weights, d_head wide) before RoPE (Qwen3)
    # Gemma 2 / 3: a norm after each sub-layer too (on its output, before it joins the residual stream)
    post_norms: bool = False
    attn_softcap: float | None = None  # scores <- cap·tanh(scores / cap) after scaling, before the mask (Gemma 2)
    logit_softcap: float | None = None  # logits <- cap·tanh(logits / cap) (Gemma 2)
    score_scale_dim: float | None = None  # scores ÷ √(this) instead of ÷ √d_head (Gemma's query_pre_attn_scalar)
    # the RoPE base of the sliding-window layers (Gemma 3's local layers, unscaled); the others keep rope_base and
    # rope_freq_factors. None -> every layer the same
    rope_base_local: float | None = None
    # Gemma 4 (model/per_layer_inputs.py; global layers: those outside window_layers): the global layers' own head
    # width and K/V heads (None -> head_dim, n_kv_heads); kv_source[i]: the layer whose K and V layer i attends
    # with (i itself, or an earlier layer of its kind that it shares them with); k_eq_v: a global layer's V is its
    # key projection (no W_V); v_norm: an RMSNorm without gain on each head's v; mlp_widths: d_mlp per layer (the
    # double-wide MLP of the K/V-sharing layers); per_layer_input: the width of the per-layer input embedding each
    # block gates in; layer_scalar: each block's output is multiplied by a learned scalar
    head_dim_global: int | None = None
    kv_heads_global: int | None = None
    kv_source: tuple[int, ...] | None = None
    k_eq_v: bool = False
    v_norm: bool = False
    mlp_widths: tuple[int, ...] | None = None
    per_layer_input: int | None = None
    layer_scalar: bool = False
    # NoPE (SmolLM3): the layers whose attention sees no positions (q and k are not turned); None -> none
    nope_layers: tuple[int, ...] | None = None
    # mixture of experts (Qwen3-MoE): n_experts > 0 makes the FFN of each layer in moe_layers (None: every layer) a
    # router over n_experts gated FFNs ("experts", expert_d_mlp wide), each token sent to its n_experts_used most
    # probable; expert_norm_topk: the chosen probabilities are divided by their sum (they then add up to 1)
    n_experts: int = 0
    n_experts_used: int = 0
    expert_d_mlp: int | None = None
    moe_layers: tuple[int, ...] | None = None
    expert_norm_topk: bool = False
    # Qwen3.5-MoE's shared expert: a gated FFN this wide that every token goes through beside its chosen experts,
    # its output times sigmoid(W_shared_gate · x); None -> none
    shared_expert_d_mlp: int | None = None
    # Gemma 4's MoE block: the experts run beside each layer's FFN (model/moe.py FfnBesideExperts), not instead of it
    experts_beside_mlp: bool = False
    # Qwen3.5's hybrid: these layers are gated DeltaNet (linear attention with a matrix state, model/deltanet.py),
    # the others attention; their key / value heads, widths and causal convolution's kernel; None -> none
    deltanet_layers: tuple[int, ...] | None = None
    deltanet_key_heads: int | None = None
    deltanet_value_heads: int | None = None
    deltanet_key_dim: int | None = None
    deltanet_value_dim: int | None = None
    deltanet_conv: int | None = None
    attn_output_gate: bool = False  # z <- z ⊙ sigmoid(W_G · x) before W_O (Qwen3.5's full-attention layers)
    activation: Activation = "gelu"
    bias: bool = True  # bias in every linear layer
    qkv_bias: bool | None = None  # override for Q/K/V only (Qwen2); None -> bias
    attn_out_bias: bool | None = None  # override for W_O only (Llama attention_bias); None -> bias
    mlp_bias: bool | None = None  # override for the FFN's matrices (Llama mlp_bias); None -> bias
    scale_attn_by_layer: bool = False  # scores also ÷ (layer index + 1) (GPT-2 scale_attn_by_inverse_layer_idx)
    tied_embeddings: bool = True
    sliding_window: int | None = None  # each query sees at most this many keys (itself included)
    window_layers: tuple[int, ...] | None = None  # the layers sliding_window applies to; None -> every layer
    final_norm: bool = True  # ln_final before the unembedding (GPT-2, Llama); BERT has none
    lm_head: bool = True  # False: the model outputs its final hidden state (sentence encoders)
    scale_embeddings: bool = False  # multiply token embeddings by sqrt(d_model) (original paper)
    n_token_types: int = 0  # BERT segment embeddings
    embed_norm: bool = False  # LayerNorm on the summed embeddings (BERT)
    pad_token_id: int | None = None
    init_std: float = 0.02
    seed: int = 0

    def __post_init__(self) -> None:
        def fail(message: str) -> None:
            raise ConfigError(message)

        if self.architecture not in ARCHITECTURES:
            fail(f"unknown architecture {self.architecture!r}; choose one of {', '.join(ARCHITECTURES)}")
        try:
            kind_of(self.pos_encoding)  # model/positional.py: the one registry
        except UnknownKind as error:
            fail(str(error))
        if self.norm not in NORMS:
            fail(f"unknown norm {self.norm!r}; choose one of {', '.join(NORMS)}")
        if self.norm_placement not in NORM_PLACEMENTS:
            fail(f"unknown norm placement {self.norm_placement!r}; choose 'pre' or 'post'")
        if self.activation not in ACTIVATIONS:
            fail(f"unknown activation {self.activation!r}; choose one of {', '.join(ACTIVATIONS)}")
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "n_ctx"):
            if getattr(self, name) < 1:
                fail(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.head_dim is not None and self.head_dim < 1:
            fail(f"head_dim must be at least 1, got {self.head_dim}")
        if self.head_dim is None and self.d_model % self.n_heads != 0:
            fail(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.kv_heads < 1 or self.n_heads % self.kv_heads != 0:
            fail(f"n_heads ({self.n_heads}) must be divisible by n_kv_heads ({self.kv_heads})")
        try:
            # the sizes this kind needs (even d_head for RoPE, ...); the kinds read a head's width as
            # d_model / n_heads, so they are handed the width all heads together have
            self.positional.check(self.n_heads * self.d_head, self.n_heads)
        except ValueError as error:
            fail(str(error))
        if self.rope_dims is not None:
            if self.positional.where != "q_k":
                fail(f"rope_dims (partial rotary) needs a rotary encoding, not {self.pos_encoding!r}")
            if not 2 <= self.rope_dims <= self.d_head or self.rope_dims % 2:
                fail(f"rope_dims must be an even number of dimensions from 2 to d_head = {self.d_head}, "
                     f"got {self.rope_dims}")
        for field in ("rope_freq_factors", "rope_long_freq_factors"):
            if getattr(self, field) is None:
                continue
            try:
                factors = tuple(float(f) for f in getattr(self, field))  # JSON gives a list
            except (TypeError, ValueError):
                fail(f"{field} must be a list of numbers, got {getattr(self, field)!r}")
            object.__setattr__(self, field, factors)
            if self.positional.where != "q_k":
                fail(f"{field} scale a rotary encoding, not {self.pos_encoding!r}")
            # they turn the global layers (rope_of): Gemma 4's have a head width of their own
            pairs = (self.rotary_dims if self.head_dim_global is None else self.head_dim_global) // 2
            if len(factors) != pairs:
                where = "d_head / 2" if self.rope_dims is None else "rope_dims / 2"
                where = where if self.head_dim_global is None else "head_dim_global / 2"
                fail(f"{field} needs one factor per rotated pair: {where} = {pairs}, got {len(factors)}")
            if not all(math.isfinite(f) and f > 0 for f in factors):
                fail(f"{field} must be finite and above 0")
        if (self.rope_long_freq_factors is None) != (self.rope_original_context is None):
            fail("rope_long_freq_factors and rope_original_context go together (longrope)")
        if self.rope_long_freq_factors is not None and self.rope_freq_factors is None:
            fail("rope_long_freq_factors needs rope_freq_factors (the short set, used up to rope_original_context)")
        if self.rope_original_context is not None and self.rope_original_context < 1:
            fail(f"rope_original_context must be at least 1, got {self.rope_original_context}")
        if not (math.isfinite(self.rope_attention_factor) and self.rope_attention_factor > 0):
            fail(f"rope_attention_factor must be finite and above 0, got {self.rope_attention_factor}")
        if self.rope_attention_factor != 1.0 and self.positional.where != "q_k":
            fail(f"rope_attention_factor scales a rotary encoding, not {self.pos_encoding!r}")
        if self.sliding_window is not None and self.sliding_window < 1:
            fail(f"sliding_window must be at least 1, got {self.sliding_window}")
        if self.window_layers is not None:
            object.__setattr__(self, "window_layers", tuple(sorted(set(self.window_layers))))  # JSON gives a list
            if self.sliding_window is None:
                fail("window_layers needs a sliding_window")
            deepest = max(self.n_layers, self.decoder_layers)
            if any(not 0 <= layer < deepest for layer in self.window_layers):
                fail(f"window_layers must name layers 0..{deepest - 1}, got {list(self.window_layers)}")
        for name in ("attn_softcap", "logit_softcap", "score_scale_dim", "rope_base_local"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                fail(f"{name} must be a number above 0, got {value!r}")
        if self.post_norms and (self.norm_placement != "pre" or self.architecture == "encoder-decoder"):
            fail("post_norms (a norm after each sub-layer too) needs norm_placement 'pre' and one stack")
        if self.rope_base_local is not None and (self.positional.where != "q_k" or self.window_layers is None):
            fail("rope_base_local sets the RoPE base of the sliding-window layers: it needs a rotary encoding and "
                 "window_layers")
        check_layer_shapes(self, fail)  # model/config_checks.py
        check_layer_kinds(self, fail)
        check_deltanet(self, fail)
        if self.d_mlp is not None and self.d_mlp < 1:
            fail(f"d_mlp must be at least 1, got {self.d_mlp}")
        if self.n_decoder_layers is not None and self.n_decoder_layers < 1:
            fail(f"n_decoder_layers must be at least 1, got {self.n_decoder_layers}")
        if self.architecture == "encoder-decoder" and not self.lm_head:
            fail("an encoder-decoder model needs its lm_head")

    def is_global(self, layer: int) -> bool:
        """A layer without a sliding window: Gemma 4's own head size, K/V heads and K = V apply there."""
        return self.window_of(layer) is None

    def d_head_of(self, layer: int) -> int:
        """This layer's head width: head_dim_global in a global layer when set, else d_head."""
        return self.head_dim_global if self.head_dim_global is not None and self.is_global(layer) else self.d_head

    def kv_heads_of(self, layer: int) -> int:
        """This layer's K/V heads: kv_heads_global in a global layer when set, else kv_heads."""
        return self.kv_heads_global if self.kv_heads_global is not None and self.is_global(layer) else self.kv_heads

    def rotary_dims_of(self, layer: int) -> int:
        return self.d_head_of(layer) if self.rope_dims is None else self.rope_dims

    def kv_source_of(self, layer: int) -> int:
        """The layer whose K and V this layer attends with: itself unless it shares an earlier one's (Gemma 4)."""
        return layer if self.kv_source is None else self.kv_source[layer]

    def mlp_width_of(self, layer: int) -> int:
        return self.mlp_width if self.mlp_widths is None else self.mlp_widths[layer]

    def k_is_v(self, layer: int) -> bool:
        """Gemma 4's attention_k_eq_v: a global layer's V is its key projection (before the k norm and RoPE)."""
        return self.k_eq_v and self.is_global(layer)

    def is_deltanet(self, layer: int) -> bool:
        """Layer `layer` is a gated DeltaNet layer (Qwen3.5), not attention."""
        return self.deltanet_layers is not None and layer in self.deltanet_layers

    @property
    def attention_layer_numbers(self) -> list[int]:
        """The layers that are attention: every one, but a hybrid's (Qwen3.5) gated DeltaNet layers."""
        return [i for i in range(self.n_layers) if not self.is_deltanet(i)]

    @property
    def hybrid(self) -> bool:
        """Some layers are not softmax attention as the rest of the project computes it: gated DeltaNet layers, or
        attention whose output is gated (Qwen3.5). What redoes attention's math outside the forward pass refuses
        these models by name."""
        return self.deltanet_layers is not None or self.attn_output_gate

    @property
    def positional(self) -> PositionalKind:
        """The positional-encoding kind (model/positional.py): what it changes and how."""
        return kind_of(self.pos_encoding)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def rotary_dims(self) -> int:
        """How many dimensions of each head RoPE turns (the first ones; the rest pass through)."""
        return self.d_head if self.rope_dims is None else self.rope_dims

    def rope_factors_at(self, length: int) -> tuple[float, ...] | None:
        """The frequency factors RoPE uses for a sequence of `length` tokens: longrope switches to its long set
        for the whole sequence once it is longer than rope_original_context (as transformers does)."""
        if self.rope_long_freq_factors is not None and self.rope_original_context is not None \
                and length > self.rope_original_context:
            return self.rope_long_freq_factors
        return self.rope_freq_factors

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def mlp_width(self) -> int:
        return 4 * self.d_model if self.d_mlp is None else self.d_mlp

    @property
    def decoder_layers(self) -> int:
        return self.n_layers if self.n_decoder_layers is None else self.n_decoder_layers

    @property
    def causal(self) -> bool:
        """Self-attention of the main stack is causal for decoders."""
        return self.architecture != "encoder"

    @property
    def use_qkv_bias(self) -> bool:
        return self.bias if self.qkv_bias is None else self.qkv_bias

    @property
    def use_attn_out_bias(self) -> bool:
        return self.bias if self.attn_out_bias is None else self.attn_out_bias

    @property
    def use_mlp_bias(self) -> bool:
        return self.bias if self.mlp_bias is None else self.mlp_bias

    @property
    def gated(self) -> bool:
        """A gated FFN (SwiGLU and its GELU/ReLU variants) with three matrices."""
        return self.activation in GATED_ACTIVATIONS

    def score_divisor(self, layer: int) -> float:
        """Q·Kᵀ is divided by this in layer `layer`: √d_head (√score_scale_dim if set), times (layer + 1) with
        scale_attn_by_layer."""
        dim = self.d_head if self.score_scale_dim is None else self.score_scale_dim
        return math.sqrt(dim) * (layer + 1 if self.scale_attn_by_layer else 1)

    def has_positions(self, layer: int) -> bool:
        """False for a NoPE layer (SmolLM3): its attention turns neither q nor k."""
        return self.nope_layers is None or layer not in self.nope_layers

    def is_moe(self, layer: int) -> bool:
        """Whether this layer's FFN is a router over experts (model/moe.py) rather than one FFN."""
        return self.n_experts > 0 and (self.moe_layers is None or layer in self.moe_layers)

    @property
    def expert_width(self) -> int:
        """Each expert's hidden width (d_mlp of one expert)."""
        return self.mlp_width if self.expert_d_mlp is None else self.expert_d_mlp

    def is_local(self, layer: int) -> bool:
        """A layer with a sliding window of its own and its own RoPE base (Gemma 3's local layers)."""
        return self.rope_base_local is not None and self.window_of(layer) is not None

    def rope_of(self, layer: int) -> tuple[float, tuple[float, ...] | None]:
        """(RoPE base, frequency factors) of this layer: a local layer's are rope_base_local and none."""
        return (self.rope_base_local or self.rope_base, None) if self.is_local(layer) else (
            self.rope_base, self.rope_freq_factors)

    def window_of(self, layer: int) -> int | None:
        """The sliding window of this layer's self-attention, or None when it sees every earlier key."""
        if self.window_layers is not None and layer not in self.window_layers:
            return None
        return self.sliding_window

    def to_dict(self) -> dict[str, Any]:
        """Every field, except a family's own option while it holds its default (OPTIONAL_FIELDS): a model
        without it is written, saved and answered as before that option existed."""
        data = dataclasses.asdict(self)
        return {name: value for name, value in data.items()
                if not (name in OPTIONAL_FIELDS and value == OPTIONAL_FIELDS[name])}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TransformerConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            named = ", ".join(f"{name} = {data[name]!r}" for name in unknown)
            raise ConfigError(f"unknown config fields (this version does not implement them): {named}")
        return cls(**data)

    def replace(self, **changes: Any) -> TransformerConfig:
        return dataclasses.replace(self, **changes)
