"""Trainable pooling (Tang & Yang, Figure 3 and official code), sized for small backbones.

A Perceiver-style resampler: trainable latent queries attend (cross-attention, LayerNorm on queries and
on keys/values, no mask besides padding) to a set of input states; a learned per-layer vector (the
"layer weight matrix", an embedding indexed by layer) is added to each layer's state; a GEGLU feed-forward
(d -> 8d -> GEGLU -> 4d -> d) with residuals; output = mean over latents, L2-normalised.

The official head (``PerceiverResampler`` in yixuantt/PoolingAndAttn) uses 768 latents at d = 4096 and a
cross-attention of 32 heads x 2,048 dims per head (inner width 65,536 = 16 d): its attention projections hold
about 1.07 B of the head's ~1.28 B parameters, the GEGLU feed-forward about 0.2 B. Its latents and layer
embedding are initialised N(0, 1), and model 4's official head does not mask padding tokens. Here the structure
is the same and the size is a parameter: by default 32 latents and ``nn.MultiheadAttention(d, 8)`` (inner width
d), the official GEGLU widths, latents initialised N(0, 1/d) and the layer embedding at 0 (the head starts on the
plain states), padding masked; at d = 576 (SmolLM2) that is ~5.3 M parameters, 4% of the backbone
(:func:`head_parameters` reports it). The pages state these deviations next to the results.

What the head sees is the model's *input spec* (Tang & Yang's Table 1):

=====  ==============================  ==========================================================
model  pooling, attention              head input
=====  ==============================  ==========================================================
1      EOS last token, causal          no head: the last layer's EOS state
2      last-layer trainable, causal    the last layer's final-position state (one state)
3      multi-layer trainable, causal   the final-position state of every layer (+ layer embedding)
4      last-layer trainable, bidir.    every token state of the last layer (padding masked)
5      multi-layer trainable, bidir.   the masked mean over tokens of every layer (+ layer embedding)
=====  ==============================  ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

HEAD_INPUTS = ("eos", "last_layer_eos", "all_layers_eos", "last_layer_tokens", "all_layers_mean", "mean")
NO_HEAD = ("eos", "mean")  # pooled without a trainable head: last layer's EOS state, or its masked mean


@dataclass(frozen=True)
class ModelSpec:
    """One of Tang & Yang's five designs."""

    name: str
    attention: str  # causal | bidirectional
    head_input: str  # one of HEAD_INPUTS ("eos" = no head)

    @property
    def has_head(self) -> bool:
        return self.head_input not in NO_HEAD

    @property
    def multi_layer(self) -> bool:
        return self.head_input.startswith("all_layers")


MODELS: dict[int, ModelSpec] = {
    1: ModelSpec("EOS-last token pooling, causal", "causal", "eos"),
    2: ModelSpec("last-layer trainable pooling, causal", "causal", "last_layer_eos"),
    3: ModelSpec("multi-layers trainable pooling, causal", "causal", "all_layers_eos"),
    4: ModelSpec("last-layer trainable pooling, bidirectional", "bidirectional", "last_layer_tokens"),
    5: ModelSpec("multi-layers trainable pooling, bidirectional", "bidirectional", "all_layers_mean"),
}


# contrastive baselines of other papers (AutoRegEmbed's "Lasttoken-InBatch" is model 1)
BASELINES: dict[str, ModelSpec] = {
    "mean": ModelSpec("mean pooling, causal", "causal", "mean"),
}


def model_spec(number: int | str) -> ModelSpec:
    if isinstance(number, bool) or number not in MODELS and number not in BASELINES:
        raise ValueError(f"unknown model {number!r}; Tang & Yang's models are 1..5, baselines: {', '.join(BASELINES)}")
    return MODELS[number] if number in MODELS else BASELINES[number]


class GEGLU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, gate = x.chunk(2, dim=-1)
        return a * F.gelu(gate)


class TrainablePooling(nn.Module):
    """Latent-query cross-attention pooling over a set of states ``[B, S, d]``."""

    def __init__(self, hidden_size: int, num_layers: int | None = None, latents: int = 32, heads: int = 8,
                 ff_mult: int = 4):
        super().__init__()
        if hidden_size % heads:
            raise ValueError(f"hidden size {hidden_size} is not divisible by {heads} heads")
        d = hidden_size
        self.layer_embedding = nn.Embedding(num_layers, d) if num_layers else None
        if self.layer_embedding is not None:
            nn.init.zeros_(self.layer_embedding.weight)  # starts as the plain states
        self.latents = nn.Parameter(torch.randn(latents, d) * d ** -0.5)
        self.norm_queries, self.norm_inputs = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attention = nn.MultiheadAttention(d, heads, batch_first=True)
        self.feed_forward = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * ff_mult * d), GEGLU(),
                                          nn.Linear(ff_mult * d, d))

    def forward(self, states: torch.Tensor, padding: torch.Tensor | None = None) -> torch.Tensor:
        """``states`` [B, S, d] (for multi-layer heads S = number of layers, in layer order);
        ``padding`` [B, S] True where a state is padding. Returns L2-normalised [B, d]."""
        if self.layer_embedding is not None:
            if states.shape[1] != self.layer_embedding.num_embeddings:
                raise ValueError(f"expected {self.layer_embedding.num_embeddings} layer states, got {states.shape[1]}")
            states = states + self.layer_embedding.weight[None]
        inputs = self.norm_inputs(states)
        queries = self.latents[None].expand(states.shape[0], -1, -1)
        attended, _ = self.attention(self.norm_queries(queries), inputs, inputs, key_padding_mask=padding,
                                     need_weights=False)
        hidden = queries + attended
        hidden = hidden + self.feed_forward(hidden)
        return F.normalize(hidden.mean(1), dim=-1)


def head_parameters(module: nn.Module | None) -> int:
    return 0 if module is None else sum(p.numel() for p in module.parameters())


def head_inputs(hidden_states, attention_mask: torch.Tensor, head_input: str):
    """From all hidden states (tuple of [B, T, d], index 0 = embeddings) and the padding mask
    (right padding), the head's input states [B, S, d] and padding mask [B, S] (or None)."""
    if head_input not in HEAD_INPUTS:
        raise ValueError(f"unknown head input '{head_input}'; valid: {', '.join(HEAD_INPUTS)}")
    last = attention_mask.sum(1) - 1
    rows = torch.arange(attention_mask.shape[0], device=attention_mask.device)
    if head_input in ("eos", "last_layer_eos"):
        return hidden_states[-1][rows, last][:, None], None
    weights = attention_mask.to(hidden_states[-1].dtype)
    if head_input == "mean":
        return ((hidden_states[-1] * weights[..., None]).sum(1) / weights.sum(1, keepdim=True))[:, None], None
    if head_input == "all_layers_eos":
        return torch.stack([h[rows, last] for h in hidden_states[1:]], dim=1), None
    if head_input == "last_layer_tokens":
        return hidden_states[-1], attention_mask == 0
    means = [(h * weights[..., None]).sum(1) / weights.sum(1, keepdim=True) for h in hidden_states[1:]]
    return torch.stack(means, dim=1), None


def make_head(spec: ModelSpec, hidden_size: int, num_layers: int, **sizes) -> TrainablePooling | None:
    if not spec.has_head:
        return None
    return TrainablePooling(hidden_size, num_layers if spec.multi_layer else None, **sizes)
