"""Small causal LMs with random weights and a BPE tokenizer, written to a directory, no download.

vLLM loads a model from a path, so GPU tests and benchmarks of the ``vllm`` backend write one
first. The tokenizer is a byte-level BPE trained in about a second on text made here (the judges'
own templates and generated words), saved as a fast ``tokenizer.json`` with a small chat template,
so prompts tokenize like a real model's and structured outputs (xgrammar) can read its vocabulary.

    path = write_local_model(tmp_path / "tiny", "tiny")                 # config, tokenizer, weights
    path = write_local_model(tmp_path / "m", "bench", weights=False)    # vLLM: load_format="dummy"

Presets: ``tiny`` (2 layers, about 1.6M parameters: tests) and ``bench`` (16 layers of width
1024, about 220M parameters: a size where an H200 is busy with the model, not with Python).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.genrm.templates import TEMPLATE_NAMES, load_template

__all__ = [
    "CHAT_TEMPLATE",
    "PRESETS",
    "ModelSize",
    "build_tokenizer",
    "llama_config",
    "parameter_count",
    "write_local_model",
]

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
_SPECIALS = ["<|pad|>", "<|bos|>", "<|eos|>"]
_SYLLABLES = [
    "ka", "to", "ri", "mu", "se", "na", "lo", "pe", "di", "yu", "an", "er", "th", "ing", "ed",
    "qu", "ox", "ze", "ul", "ba", "ch", "sh", "re", "co", "mi", "st", "pr", "ion", "al", "ve",
]  # fmt: skip
_WORDS = [
    "the", "response", "question", "answer", "Yes", "No", "RESULT", "correct", "reference",
    "grader", "score", "criterion", "rubric", "is", "a", "of", "and", "to", "what", "sum",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class ModelSize:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    """Asked of the BPE trainer; the model's vocabulary is the tokenizer's actual size."""
    max_positions: int = 4096


PRESETS = {
    "tiny": ModelSize(
        hidden=256, layers=2, heads=4, kv_heads=4, intermediate=512, vocab=1024, max_positions=2048
    ),
    "bench": ModelSize(hidden=1024, layers=16, heads=8, kv_heads=8, intermediate=2816, vocab=8192),
}


def _corpus(seed: int, lines: int) -> Iterator[str]:
    rng = random.Random(seed)
    for name in TEMPLATE_NAMES:  # the judges' own instructions: their words get merged
        yield load_template(name)
    for _ in range(lines):
        words = []
        for _ in range(rng.randint(8, 24)):
            roll = rng.random()
            if roll < 0.4:
                words.append(rng.choice(_WORDS))
            elif roll < 0.5:
                words.append(str(rng.randint(0, 9999)))
            else:
                words.append("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))))
        yield " ".join(words) + rng.choice([".", "?", "\n", " [RESULT] Yes\n", " [RESULT] No\n"])


def build_tokenizer(vocab_size: int = 1024, seed: int = 0) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` (bos/eos/pad set, chat template included),
    trained on generated text: any string encodes, nothing is downloaded."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=_SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(seed, lines=max(2000, vocab_size)), trainer)
    fast_cls: Any = transformers.PreTrainedTokenizerFast  # an untyped class in transformers 5
    fast = fast_cls(
        tokenizer_object=tok, bos_token="<|bos|>", eos_token="<|eos|>", pad_token="<|pad|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def llama_config(size: ModelSize, tokenizer: Any) -> Any:
    """A Llama config of ``size`` whose vocabulary is exactly the tokenizer's."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=size.hidden,
        intermediate_size=size.intermediate,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        num_key_value_heads=size.kv_heads,
        max_position_embeddings=size.max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def parameter_count(size: ModelSize, vocab: int | None = None) -> int:
    """Parameters of a Llama of this size (embeddings and LM head untied)."""
    v = size.vocab if vocab is None else vocab
    head_dim = size.hidden // size.heads
    attention = size.hidden * head_dim * (2 * size.heads + 2 * size.kv_heads)
    mlp = 3 * size.hidden * size.intermediate
    norms = 2 * size.hidden
    return 2 * v * size.hidden + size.layers * (attention + mlp + norms) + size.hidden


def write_local_model(
    directory: str | Path,
    preset: str | ModelSize = "tiny",
    *,
    weights: bool = True,
    seed: int = 0,
    dtype: str = "bfloat16",
) -> Path:
    """Write config.json, the tokenizer and (``weights=True``) random safetensors weights of a
    Llama to ``directory``; returns it. Without weights, load it with vLLM's
    ``load_format="dummy"`` (random weights made on the GPU)."""
    size = PRESETS[preset] if isinstance(preset, str) else preset
    if size.hidden % size.heads or size.heads % size.kv_heads:
        raise ValueError("hidden must divide by heads, and heads by kv_heads")
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(size.vocab, seed)
    tokenizer.save_pretrained(path)
    config = llama_config(size, tokenizer)
    if weights:
        import torch
        from transformers import LlamaForCausalLM

        torch.manual_seed(seed)
        model = LlamaForCausalLM(config).to(getattr(torch, dtype))
        model.save_pretrained(path)
    else:
        config.save_pretrained(path)
    return path
