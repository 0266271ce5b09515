"""Whisper as two exportable graphs with explicit state, for MNN.

* ``EncoderKV``: log-mel features ``[1, M, 2*S]`` -> cross-attention keys/values ``[L, 1, H, S, D]``.
  The cross KV is computed once per request; the decoder never re-projects the encoder output.
* ``DecoderStep``: ``tokens [1, K]``, ``positions [K]`` and the self-attention KV ``[L, 1, H, P, D]``
  -> logits ``[1, K, V]`` for every position plus the grown KV ``[L, 1, H, P+K, D]``. One forward
  verifies K tokens; rollback is slicing the KV's position axis outside the graph.

Attention is written out here (not HF's module) so that the KV is a plain tensor the exporter can
see. The arithmetic order follows transformers' Whisper (query scaled before the product) so the
MNN engine's greedy output stays close to torch's (F.6 reports where they differ).
"""

from __future__ import annotations

import torch
from torch import nn


class EncoderKV(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.encoder = model.model.encoder
        self.layers = model.model.decoder.layers
        cfg = model.config
        self.heads, self.head_dim = cfg.decoder_attention_heads, cfg.d_model // cfg.decoder_attention_heads

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        enc = self.encoder(features).last_hidden_state  # [1, S, d]
        ks, vs = [], []
        for layer in self.layers:
            att = layer.encoder_attn
            ks.append(att.k_proj(enc).view(1, -1, self.heads, self.head_dim).transpose(1, 2))
            vs.append(att.v_proj(enc).view(1, -1, self.heads, self.head_dim).transpose(1, 2))
        return torch.stack(ks), torch.stack(vs)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    scores = torch.matmul(q, k.transpose(2, 3))
    if mask is not None:
        scores = scores + mask
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class DecoderStep(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        dec = model.model.decoder
        self.embed_tokens, self.embed_positions = dec.embed_tokens, dec.embed_positions
        self.layers, self.layer_norm, self.proj_out = dec.layers, dec.layer_norm, model.proj_out
        cfg = model.config
        self.heads, self.head_dim = cfg.decoder_attention_heads, cfg.d_model // cfg.decoder_attention_heads
        self.scaling = self.head_dim**-0.5

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(1, -1, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor, past_k: torch.Tensor, past_v: torch.Tensor,
                cross_k: torch.Tensor, cross_v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        pos = positions.long()
        x = self.embed_tokens(tokens.long()) + self.embed_positions.weight[pos].unsqueeze(0)
        new_k, new_v, mask = [], [], None
        for i, layer in enumerate(self.layers):
            att = layer.self_attn
            h = layer.self_attn_layer_norm(x)
            q = self._split(att.q_proj(h) * self.scaling)
            k = torch.cat([past_k[i], self._split(att.k_proj(h))], dim=2)
            v = torch.cat([past_v[i], self._split(att.v_proj(h))], dim=2)
            if mask is None:
                # Key j is visible to query i iff j <= positions[i]; key positions are counted along
                # the grown KV itself, so the mask needs no shape input of its own.
                key_pos = torch.cumsum(torch.ones_like(k[0, 0, :, 0]), 0) - 1
                mask = (key_pos.unsqueeze(0) > pos.unsqueeze(1).float()).float() * -1e9
            new_k.append(k)
            new_v.append(v)
            o = _attend(q, k, v, mask).transpose(1, 2).reshape(1, -1, self.heads * self.head_dim)
            x = x + att.out_proj(o)
            cross = layer.encoder_attn
            h = layer.encoder_attn_layer_norm(x)
            q = self._split(cross.q_proj(h) * self.scaling)
            o = _attend(q, cross_k[i], cross_v[i], None).transpose(1, 2).reshape(1, -1, self.heads * self.head_dim)
            x = x + cross.out_proj(o)
            h = layer.final_layer_norm(x)
            x = x + layer.fc2(layer.activation_fn(layer.fc1(h)))
        x = self.layer_norm(x)
        logits = self.proj_out(x)
        return logits, torch.stack(new_k), torch.stack(new_v)
