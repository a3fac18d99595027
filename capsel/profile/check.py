"""One call from a model path to its rank profile and U-shape verdict (CLI and selection flow)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from capsel.cap_engine.prompt_format import resolve_prompt_format
from capsel.models.loading import load_causal_lm, random_init_like
from capsel.profile.survey import RankProfile, rank_profile
from capsel.profile.texts import load_texts
from capsel.profile.verdict import Verdict, has_u_shape


def check_model(
    name_or_path: str | Path, texts: Path | None = None, random_init: bool = False, seed: int = 0,
    max_tokens: int = 2048, trust_remote_code: bool = False, prompt_format: str = "auto", allow_pickle: bool = False,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> tuple[RankProfile, Verdict]:
    """Load a local causal LM (or the same architecture freshly initialised), survey it, judge the U-shape.

    The texts are tokenised as the scorer tokenises prompts in `prompt_format` (auto: chat when the
    tokenizer has a chat template), so the survey sees the model in the format it will be scored in.
    """
    model, tokenizer = load_causal_lm(name_or_path, trust_remote_code=trust_remote_code, allow_pickle=allow_pickle)
    name = Path(name_or_path).name or str(name_or_path)
    if random_init:
        model, name = random_init_like(name_or_path, seed, trust_remote_code), f"{name} (random init, seed {seed})"
    profile = rank_profile(model, tokenizer, load_texts(texts), name=name, max_tokens=max_tokens,
                           prompt_format=resolve_prompt_format(prompt_format, tokenizer), on_progress=on_progress)
    return profile, has_u_shape(profile)
