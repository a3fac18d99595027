"""The pipeline a user would write from the paper, for the benchmarks to time capsel's engine against.

ŷ by batched greedy decoding (HF `generate` with its KV cache, or any capsel `Generator` such as vLLM's), then
two batched full forwards per batch, [x;y] and [x;ŷ], with output_hidden_states=True and full-vocabulary logits
at every position. Per candidate: 1 - cos over the aligned positions of each layer's hidden states, the late
layers' mean and the reference PPL. Nothing here is capsel's engine; the batching helpers only pad.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from capsel.cap_engine.batching import left_padded, length_sorted_batches, right_padded
from capsel.cap_engine.config import layer_split
from capsel.cap_engine.inputs import ScoringInput


def hf_generate(loaded, inputs: Sequence[ScoringInput], horizon: int, batch_size: int) -> dict[str, list[int]]:
    """ŷ of each input by HF `generate` (greedy, left-padded batches sorted by prompt length), EOS cut off."""
    model, device = loaded.model, loaded.input_device
    eos = sorted(loaded.info.eos_token_ids)
    pad = loaded.info.tokenizer.pad_token_id
    generated: dict[str, list[int]] = {}
    with torch.inference_mode():
        for batch in length_sorted_batches(inputs, batch_size, lambda item: len(item.prompt_ids)):
            ids, mask = left_padded([item.prompt_ids for item in batch], pad, device)
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=horizon, do_sample=False,
                                 num_beams=1, eos_token_id=eos, pad_token_id=pad)
            for item, row in zip(batch, out[:, ids.shape[1]:].tolist()):
                stop = next((i for i, token in enumerate(row) if token in eos), len(row))
                generated[item.candidate_id] = row[:stop]
    return generated


def full_forwards(loaded, inputs: Sequence[ScoringInput], generated: dict[str, list[int]],
                  batch_size: int) -> dict[str, list[float]]:
    """Per candidate: D_l for every layer (HF's hidden states; its last is after the final norm), then the late
    layers' mean and the reference PPL, from one full forward of each branch."""
    model, device = loaded.model, loaded.input_device
    pad = loaded.info.tokenizer.pad_token_id
    _, late = layer_split(len(loaded.blocks), 0.33, 0.66)
    profiles: dict[str, list[float]] = {}
    with torch.inference_mode():
        for batch in length_sorted_batches(inputs, batch_size, lambda item: len(item.prompt_ids)):
            hats = [generated[item.candidate_id] for item in batch]
            real_ids, real_mask = right_padded([b.prompt_ids + b.response_ids for b in batch], pad, device)
            gen_ids, gen_mask = right_padded([b.prompt_ids + g for b, g in zip(batch, hats)], pad, device)
            real = model(input_ids=real_ids, attention_mask=real_mask, output_hidden_states=True)
            gen = model(input_ids=gen_ids, attention_mask=gen_mask, output_hidden_states=True)
            for row, (item, hat) in enumerate(zip(batch, hats)):
                start, n = len(item.prompt_ids), min(len(item.response_ids), len(hat))
                if n == 0:
                    continue
                aligned = slice(start, start + n)
                profile = [
                    float((1 - F.cosine_similarity(hr[row, aligned].float(), hg[row, aligned].float(), dim=-1)).mean())
                    for hr, hg in zip(real.hidden_states[1:], gen.hidden_states[1:])
                ]
                predicting = real.logits[row, start - 1:start - 1 + len(item.response_ids)]
                targets = torch.tensor(item.response_ids, device=predicting.device)[:, None]
                nll = -predicting.float().log_softmax(-1).gather(-1, targets).mean()
                d_late = sum(profile[layer - 1] for layer in late) / len(late)
                profiles[item.candidate_id] = profile + [d_late, float(nll.exp())]
    return profiles


def paper_style(loaded, inputs: Sequence[ScoringInput], horizon: int, batch_size: int) -> dict[str, list[float]]:
    """HF `generate`, then the two full forwards, on one batch size."""
    return full_forwards(loaded, inputs, hf_generate(loaded, inputs, horizon, batch_size), batch_size)
