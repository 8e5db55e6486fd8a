"""The small Llama with random weights that tests, benches and the tiny policy build from a
config instead of downloading weights (this service never reaches a model hub)."""

from __future__ import annotations

from typing import Any

__all__ = ["tiny_llama"]


def tiny_llama(
    tokenizer: Any,
    *,
    hidden: int = 64,
    max_positions: int = 2048,
    seed: int = 0,
    tie_word_embeddings: bool = False,
) -> Any:
    """A 2-layer Llama sized to ``tokenizer`` (4 attention heads, an MLP twice ``hidden``),
    its weights drawn after ``torch.manual_seed(seed)``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=tie_word_embeddings,
    )
    return LlamaForCausalLM(config)
