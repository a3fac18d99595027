"""Naive CAP reference, written straight from docs/method.md "The method, exactly".

One candidate at a time, no batching, no padding, no KV cache: every greedy step re-runs
the whole sequence, each branch is one full forward of [x;y] or [x;y-hat], hooks keep
every position and the response positions are sliced out afterwards. Slow on purpose.
"""

from __future__ import annotations

import numpy as np
import torch


def naive_prompt_and_response(tokenizer, candidate: dict, prompt_tokens: int, horizon: int, prompt_format: str = "raw"):
    """(full prompt ids, full response ids, truncated prompt ids, truncated response ids)."""
    text = candidate["instruction"].strip()
    if candidate.get("input", "").strip():
        text = text + "\n" + candidate["input"].strip()
    if prompt_format == "chat":
        # The template rendered to text, then that text tokenised as it stands (the template spells its own BOS).
        rendered = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                                 tokenize=False)
        prompt = tokenizer(rendered, add_special_tokens=False).input_ids
    else:
        prompt = tokenizer(text).input_ids
    response = tokenizer(candidate["response"].strip(), add_special_tokens=False).input_ids
    kept_prompt = prompt[len(prompt) - prompt_tokens:] if len(prompt) > prompt_tokens else prompt
    return prompt, response, kept_prompt, response[:horizon]


def naive_greedy(model, prompt: list[int], horizon: int, eos_ids: set[int]) -> list[int]:
    """Argmax loop re-running the full sequence each step; stops before EOS, at most horizon tokens."""
    generated: list[int] = []
    while len(generated) < horizon:
        with torch.no_grad():
            logits = model(torch.tensor([prompt + generated])).logits[0, -1]
        token = int(torch.argmax(logits))
        if token in eos_ids:
            break
        generated.append(token)
    return generated


def naive_block_outputs(model, blocks, ids: list[int], forward_inputs: dict | None = None
                        ) -> tuple[list[np.ndarray], np.ndarray]:
    """Every block's output at every position ([T, H] per layer, float64) and the logits [T, V].

    `forward_inputs` replaces the plain `input_ids` (a VLM's full sequence with its pixel tensors).
    """
    captured: dict[int, np.ndarray] = {}

    def hook(index):
        def keep(_module, _inputs, output):
            tensor = output if isinstance(output, torch.Tensor) else output[0]
            captured[index] = tensor[0].detach().double().numpy()
        return keep

    handles = [block.register_forward_hook(hook(i)) for i, block in enumerate(blocks)]
    try:
        with torch.no_grad():
            inputs = forward_inputs if forward_inputs is not None else {"input_ids": torch.tensor([ids])}
            logits = model(**inputs).logits[0].double().numpy()
    finally:
        for handle in handles:
            handle.remove()
    return [captured[i] for i in range(len(blocks))], logits


def naive_cap(
    model, blocks, tokenizer, candidate: dict, eos_ids: set[int], prompt_tokens: int = 256, horizon: int = 48,
    early: float = 0.33, late: float = 0.66, prompt_format: str = "raw",
) -> dict:
    """Generation, per-layer divergence, D_early, D_late and reference PPL for one candidate."""
    full_prompt, full_response, x, y = naive_prompt_and_response(
        tokenizer, candidate, prompt_tokens, horizon, prompt_format
    )
    result = {
        "candidate_id": candidate["candidate_id"], "excluded_reason": None, "generated": None,
        "prompt_ids": x, "response_ids": y,
    }
    if len(full_prompt) < 2:
        return {**result, "excluded_reason": "short_prompt"}
    if len(full_response) < 6:
        return {**result, "excluded_reason": "short_response"}
    y_hat = naive_greedy(model, x, horizon, eos_ids)
    result["generated"] = y_hat
    if not y_hat:
        return {**result, "excluded_reason": "empty_generation"}
    n = min(len(y), len(y_hat))
    real, logits = naive_block_outputs(model, blocks, x + y)
    gen, _ = naive_block_outputs(model, blocks, x + y_hat)
    start = len(x)
    profile = []
    for layer in range(len(blocks)):
        a = real[layer][start:start + n]
        b = gen[layer][start:start + n]
        cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
        profile.append(float(np.mean(1.0 - cos)))
    n_layers = len(blocks)
    # l <= early*L and l >= late*L with the fractions read as two-decimal numbers (integer arithmetic).
    early_hundredths, late_hundredths = round(early * 100), round(late * 100)
    early_layers = [l for l in range(1, n_layers + 1) if l * 100 <= early_hundredths * n_layers]
    late_layers = [l for l in range(1, n_layers + 1) if l * 100 >= late_hundredths * n_layers]
    # Logits at position p predict token p+1: y's tokens are predicted from positions start-1 .. start+|y|-2.
    predicting = logits[start - 1:start - 1 + len(y)]
    shifted = predicting - predicting.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    nll = -log_probs[np.arange(len(y)), y]
    return {
        **result,
        "n_aligned": n,
        "layer_divergence": profile,
        "d_early": float(np.mean([profile[l - 1] for l in early_layers])),
        "d_late": float(np.mean([profile[l - 1] for l in late_layers])),
        "ppl": float(np.exp(nll.mean())),
    }
