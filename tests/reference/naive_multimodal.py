"""Naive multimodal CAP reference, written from docs/method.md "The method, exactly" and issue 21.

One candidate at a time, no cache: the processor builds each full sequence ([x;y] and [x;y-hat]) with
the images, and every forward re-runs the vision encoder. The prompt comes from the processor's own
tokenizing chat-template route, with the image parts naming their files (the processor opens them).
Truncation is done the slow way: drop 0, 1, 2, ... images from the front until the last P text ids
contain whole image spans only. y-hat is an argmax loop over full sequences; hooks on the text
decoder's blocks keep every position and the response positions are sliced out afterwards.
"""

from __future__ import annotations

import numpy as np
import torch

from tests.reference.naive_cap import naive_block_outputs


def naive_prompt(processor, candidate: dict, markers: set[int], prompt_tokens: int):
    """(full prompt length, kept prompt ids, the processor's other tensors, images dropped)."""
    text = candidate["instruction"].strip()
    if candidate.get("input", "").strip():
        text = text + "\n" + candidate["input"].strip()
    images = list(candidate.get("images", ()))
    full_length = None
    for dropped in range(len(images) + 1):
        pieces = text.split("<image>")
        # the first `dropped` placeholders go, the pieces around them joined
        pieces = ["".join(pieces[: dropped + 1])] + pieces[dropped + 1:]
        content: list[dict] = []
        for index, piece in enumerate(pieces):
            if index:
                content.append({"type": "image", "path": images[dropped + index - 1]})
            if piece:
                content.append({"type": "text", "text": piece})
        encoded = dict(processor.apply_chat_template(
            [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=True, return_dict=True,
            return_tensors="pt",
        ))
        ids = encoded.pop("input_ids")[0].tolist()
        encoded.pop("attention_mask", None)
        full_length = len(ids) if full_length is None else full_length
        text_positions = [p for p, token in enumerate(ids) if token not in markers]
        cut = 0 if len(text_positions) <= prompt_tokens else text_positions[-prompt_tokens]
        if not any(token in markers for token in ids[:cut]):
            tensors = {k: v[:, cut:] if k.endswith("token_type_ids") else v for k, v in encoded.items()}
            return full_length, ids[cut:], tensors, dropped
    raise AssertionError("unreachable: with every image dropped no image token is left")


def _inputs(ids: list[int], tensors: dict) -> dict:
    """Model inputs for a full sequence: per-token type ids padded with text (0) past the prompt."""
    width = len(ids)
    out = {"input_ids": torch.tensor([ids])}
    for name, value in tensors.items():
        if name.endswith("token_type_ids"):
            value = torch.cat([value, value.new_zeros(1, width - value.shape[1])], dim=1)
        out[name] = value
    return out


def naive_greedy(model, prompt: list[int], tensors: dict, horizon: int, eos_ids: set[int]) -> list[int]:
    """Argmax loop re-running the full sequence (and the vision encoder) each step; stops before EOS."""
    generated: list[int] = []
    while len(generated) < horizon:
        with torch.no_grad():
            logits = model(**_inputs(prompt + generated, tensors)).logits[0, -1]
        token = int(torch.argmax(logits))
        if token in eos_ids:
            break
        generated.append(token)
    return generated


def naive_multimodal_cap(
    model, blocks, processor, candidate: dict, eos_ids: set[int], markers: set[int], prompt_tokens: int = 256,
    horizon: int = 48, early: float = 0.33, late: float = 0.66, min_response: int = 6,
) -> dict:
    """Generation, per-layer divergence, D_early, D_late, PPL and images dropped for one candidate."""
    full_length, x, tensors, dropped = naive_prompt(processor, candidate, markers, prompt_tokens)
    full_response = processor.tokenizer(candidate["response"].strip(), add_special_tokens=False).input_ids
    y = full_response[:horizon]
    result = {"candidate_id": candidate["candidate_id"], "excluded_reason": None, "generated": None,
              "prompt_ids": x, "response_ids": y, "images_dropped": dropped}
    if full_length < 2:
        return {**result, "excluded_reason": "short_prompt"}
    if len(full_response) < min_response:
        return {**result, "excluded_reason": "short_response"}
    y_hat = naive_greedy(model, x, tensors, horizon, eos_ids)
    result["generated"] = y_hat
    if not y_hat:
        return {**result, "excluded_reason": "empty_generation"}
    n = min(len(y), len(y_hat))
    real, logits = naive_block_outputs(model, blocks, x + y, _inputs(x + y, tensors))
    gen, _ = naive_block_outputs(model, blocks, x + y_hat, _inputs(x + y_hat, tensors))
    start = len(x)
    profile = []
    for layer in range(len(blocks)):
        a, b = real[layer][start:start + n], gen[layer][start:start + n]
        cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
        profile.append(float(np.mean(1.0 - cos)))
    n_layers = len(blocks)
    early_layers = [l for l in range(1, n_layers + 1) if l * 100 <= round(early * 100) * n_layers]
    late_layers = [l for l in range(1, n_layers + 1) if l * 100 >= round(late * 100) * n_layers]
    predicting = logits[start - 1:start - 1 + len(y)]
    shifted = predicting - predicting.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    nll = -log_probs[np.arange(len(y)), y]
    return {
        **result, "n_aligned": n, "layer_divergence": profile,
        "d_early": float(np.mean([profile[l - 1] for l in early_layers])),
        "d_late": float(np.mean([profile[l - 1] for l in late_layers])),
        "ppl": float(np.exp(nll.mean())),
    }
