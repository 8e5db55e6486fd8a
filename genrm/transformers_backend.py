"""The ``transformers`` backend: a causal LM in-process (CPU or one GPU), batched generation.

    backend = TransformersBackend.from_pretrained("/path/to/judge")      # real weights, local path
    backend = TransformersBackend(model, tokenizer, name="tiny")         # a model built in memory

Generation runs in a worker thread (never on the event loop), one batch at a time (a lock: one
model, one forward pass at a time), with left padding so a batch of prompts decodes together.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from referee.genrm.backend import Completion, Prompt, SamplingParams

__all__ = ["TransformersBackend", "render_prompt"]


def render_prompt(tokenizer: Any, prompt: Prompt) -> str:
    """A chat prompt through the tokenizer's chat template, or plain role-tagged text."""
    if isinstance(prompt, str):
        return prompt
    messages = [dict(m) for m in prompt]
    if getattr(tokenizer, "chat_template", None):
        return str(
            tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        )
    lines = [f"{m['role']}: {m['content']}" for m in messages]
    return "\n".join(lines) + "\nassistant:"


class TransformersBackend:
    def __init__(
        self, model: Any, tokenizer: Any, name: str = "transformers", max_batch: int = 16
    ) -> None:
        import torch

        self.name = "transformers"
        self.model_name = name
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_batch = max_batch
        self._torch = torch
        self._lock = threading.Lock()
        if getattr(tokenizer, "pad_token_id", None) is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"

    @classmethod
    def from_pretrained(cls, path: str, device: str = "cpu", **kw: Any) -> TransformersBackend:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path)
        model: Any = AutoModelForCausalLM.from_pretrained(path)
        model = model.to(device)
        return cls(model, tokenizer, name=path, **kw)

    async def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams
    ) -> list[list[Completion]]:
        texts = [render_prompt(self.tokenizer, p) for p in prompts]
        out: list[list[Completion]] = []
        for start in range(0, len(texts), self.max_batch):
            chunk = texts[start : start + self.max_batch]
            out.extend(await asyncio.to_thread(self._generate_sync, chunk, params))
        return out

    def _label_ids(self, labels: Sequence[str]) -> dict[str, int]:
        ids = {}
        for label in labels:
            encoded = self.tokenizer(label, add_special_tokens=False)["input_ids"]
            if not encoded:
                raise ValueError(f"label {label!r} encodes to no token")
            ids[label] = int(encoded[0])
        return ids

    def _generate_sync(self, texts: list[str], params: SamplingParams) -> list[list[Completion]]:
        torch = self._torch
        tok = self.tokenizer
        with self._lock, torch.inference_mode():
            batch = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
            batch = {k: v.to(self.model.device) for k, v in batch.items()}
            if params.seed is not None:
                torch.manual_seed(params.seed)
            sample = params.temperature > 0
            gen_kwargs: dict[str, Any] = {
                "max_new_tokens": params.max_tokens,
                "do_sample": sample,
                # greedy decoding gives one answer: compute it once, return it n times
                "num_return_sequences": params.n if sample else 1,
                "output_logits": True,
                "return_dict_in_generate": True,
                "pad_token_id": tok.pad_token_id,
            }
            if sample:
                gen_kwargs.update(temperature=params.temperature, top_p=params.top_p)
            result = self.model.generate(**batch, **gen_kwargs)
            prompt_len = batch["input_ids"].shape[1]
            new_tokens = result.sequences[:, prompt_len:]
            # raw logits (not the sampler's warped scores): the model's own distribution
            logprobs = [torch.log_softmax(s.float(), dim=-1) for s in result.logits]
            label_ids = self._label_ids(params.label_tokens) if params.label_tokens else {}
            per_prompt = params.n if sample else 1
            completions: list[list[Completion]] = [[] for _ in texts]
            for row in range(new_tokens.shape[0]):
                ids = new_tokens[row].tolist()
                length = len(ids)
                if tok.eos_token_id is not None and tok.eos_token_id in ids:
                    length = ids.index(tok.eos_token_id)
                text = tok.decode(ids[:length], skip_special_tokens=True)
                finish = "stop" if length < len(ids) else "length"
                for stop in params.stop:
                    if stop in text:
                        text, finish = text[: text.index(stop)], "stop"
                token_lp = (
                    tuple(float(logprobs[t][row, ids[t]]) for t in range(length))
                    if params.logprobs
                    else None
                )
                labels = (
                    {lab: float(logprobs[0][row, i]) for lab, i in label_ids.items()}
                    if label_ids and logprobs
                    else None
                )
                top = None
                if params.top_logprobs and logprobs:
                    k = min(params.top_logprobs, int(logprobs[0].shape[-1]))
                    values, indices = torch.topk(logprobs[0][row], k)
                    top = {
                        str(tok.convert_ids_to_tokens(int(i))): float(v)
                        for v, i in zip(values.tolist(), indices.tolist(), strict=True)
                    }
                completions[row // per_prompt].append(
                    Completion(
                        text=text,
                        finish_reason=finish,
                        token_logprobs=token_lp,
                        label_logprobs=labels,
                        first_top_logprobs=top,
                        tokens=length,
                    )
                )
            if not sample and params.n > 1:
                completions = [row * params.n for row in completions]
            return completions

    async def close(self) -> None:
        return None
