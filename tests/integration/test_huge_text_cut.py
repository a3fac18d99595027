"""Huge texts are cut before tokenising, and the ids the method keeps are exactly those of the whole text,
on the real SmolLM2 (byte-level BPE, chat template) and Gemma 3 (SentencePiece-style BPE) tokenizers."""

from __future__ import annotations

import random

import pytest
from transformers import AutoTokenizer

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.huge_text_cut import HugeTextCut, _crosses_a_boundary, is_safe_boundary
from capsel.cap_engine.inputs import CandidateText, build_inputs, prompt_text
from capsel.cap_engine.prompt_format import CHAT, RAW, prompt_token_ids
from tests.fixtures.tiny_models import build_tokenizer

pytestmark = pytest.mark.slow

PIECES = [
    "the", "alpha", "Zürich", "naïve", "e\u0301te\u0301", "日本語の文章", "中文字符", "😀", "👩\u200d💻", "▁", "x▁y", "▁▁z",
    "2024", "3.14", "²", "---", "...", "don't", "it's", "<|im_start|>", "<start_of_turn>", "<b>", "> </", "a" * 300,
    "\t", "\n", "\r\n", "  ", "   ", "\u00a0", "\u3000", "Ωμέγα", "ملف", "ok",
]
SEPARATORS = [" ", " ", " ", "", "\n", "  ", "\t", " \n"]


def random_text(rng: random.Random, n_chars: int) -> str:
    parts, size = [], 0
    while size < n_chars:
        piece = rng.choice(PIECES) + rng.choice(SEPARATORS)
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


@pytest.fixture(scope="module", params=["smollm2", "gemma3"])
def tokenizer(request, smollm2_instruct_dir, gemma3_270m_dir):
    folder = {"smollm2": smollm2_instruct_dir, "gemma3": gemma3_270m_dir}[request.param]
    return AutoTokenizer.from_pretrained(folder)


def whole_text_ids(tokenizer, prompt: str, response: str, prompt_format: str, config: ScoringConfig):
    """The ids as the method defines them, from the whole texts (no cut)."""
    prompt_ids = prompt_token_ids(tokenizer, [prompt], prompt_format)[0][-config.prompt_tokens:]
    response_ids = tokenizer(response.strip(), add_special_tokens=False).input_ids[: config.horizon]
    return list(prompt_ids), list(response_ids)


def formats(tokenizer) -> list[str]:
    return [RAW, CHAT] if tokenizer.chat_template else [RAW]


@pytest.mark.parametrize(("prompt_tokens", "horizon"), [(256, 48), (4, 1), (32, 8)])
def test_cut_texts_give_the_whole_texts_ids(tokenizer, prompt_tokens, horizon):
    cap = HugeTextCut.of(tokenizer)
    assert cap is not None and cap.chat_safe == bool(tokenizer.chat_template)
    config = ScoringConfig(prompt_tokens=prompt_tokens, horizon=horizon, min_prompt_tokens=1, min_response_tokens=1)
    rng = random.Random(prompt_tokens)
    n_cut = 0
    for index in range(12):
        prompt = random_text(rng, rng.choice([200, 5 * (prompt_tokens + 2) * cap.max_chars, 120_000]))
        response = random_text(rng, rng.choice([50, 5 * (horizon + 2) * cap.max_chars, 60_000]))
        n_cut += len(cap.tail(prompt, prompt_tokens)) < len(prompt)
        n_cut += len(cap.head(response.strip(), horizon)) < len(response.strip())
        candidate = CandidateText(f"c{index}", prompt, "", response)
        for prompt_format in formats(tokenizer):
            [built] = build_inputs([candidate], tokenizer, config.model_copy(update={"prompt_format": prompt_format}))
            expected = whole_text_ids(tokenizer, prompt_text(prompt, ""), response, prompt_format, config)
            assert (built.prompt_ids, built.response_ids) == expected, (index, prompt_format)
    assert n_cut >= 8  # the cut really happened in most cases


def test_a_million_characters_are_cut_to_the_same_ids(tokenizer):
    config = ScoringConfig()
    rng = random.Random(1)
    prompt, response = random_text(rng, 1_000_000), random_text(rng, 1_000_000)
    cap = HugeTextCut.of(tokenizer)
    assert len(cap.tail(prompt, config.prompt_tokens)) < 60_000 and len(cap.head(response, config.horizon)) < 30_000
    for prompt_format in formats(tokenizer):
        [built] = build_inputs([CandidateText("big", prompt, "", response)], tokenizer,
                               config.model_copy(update={"prompt_format": prompt_format}))
        expected = whole_text_ids(tokenizer, prompt_text(prompt, ""), response, prompt_format, config)
        assert (built.prompt_ids, built.response_ids) == expected


def test_a_text_without_a_safe_boundary_is_tokenised_whole(tokenizer):
    cap = HugeTextCut.of(tokenizer)
    one_word = "x" * 200_000
    assert cap.head(one_word, 48) == one_word and cap.tail(one_word, 256) == one_word
    spaced_digits = " 1" * 100_000  # spaces, but never before a letter
    assert cap.head(spaced_digits, 48) == spaced_digits


def test_safe_boundaries_and_the_vocabulary_check():
    text = "ab cd 1 ▁ ef\u00a0 gh"
    assert [i for i in range(len(text)) if is_safe_boundary(text, i)] == [2]  # not before 1, after ▁ or a space
    assert _crosses_a_boundary("a▁b") and _crosses_a_boundary("a▁") and _crosses_a_boundary("▁▁x▁y")
    assert not _crosses_a_boundary(">▁</") and not _crosses_a_boundary("▁▁▁") and not _crosses_a_boundary("▁word")


def test_a_tokenizer_the_argument_does_not_cover_is_never_cut():
    assert HugeTextCut.of(build_tokenizer()) is None  # the tiny word-level tokenizer of the test models


def test_characters_without_an_id_keep_a_text_whole(tokenizer):
    cap = HugeTextCut.of(tokenizer)
    # independently: the ASCII characters this tokenizer turns into no id at all
    dropped = "".join(chr(code) for code in range(128) if not tokenizer(chr(code), add_special_tokens=False).input_ids)
    assert cap.no_id_chars == dropped
    config = ScoringConfig(min_prompt_tokens=1, min_response_tokens=1)
    filler = (dropped or "\x04") * (10 * (config.prompt_tokens + 2) * cap.max_chars)
    words = " the alpha Zürich" * 400
    # a run without ids ahead of the words: the first R ids lie past any window the cut could take
    response, prompt = filler + words, words + filler
    for prompt_format in formats(tokenizer):
        [built] = build_inputs([CandidateText("dropped", prompt, "", response)], tokenizer,
                               config.model_copy(update={"prompt_format": prompt_format}))
        expected = whole_text_ids(tokenizer, prompt_text(prompt, ""), response, prompt_format, config)
        assert (built.prompt_ids, built.response_ids) == expected, prompt_format
        assert len(built.response_ids) == config.horizon


def test_a_byte_level_vocabulary_without_a_continuation_byte_is_never_cut(smollm2_instruct_dir, tmp_path):
    import json
    import shutil

    from capsel.cap_engine.huge_text_cut import _BYTE_SYMBOLS

    folder = shutil.copytree(smollm2_instruct_dir, tmp_path / "tok", ignore=shutil.ignore_patterns("*.safetensors"))
    spec = json.loads((folder / "tokenizer.json").read_text())
    symbol = _BYTE_SYMBOLS[0xA9]  # 0xA9 ends "©" and many other characters
    model = spec["model"]
    model["vocab"] = {entry: index for entry, index in model["vocab"].items() if symbol not in entry}
    model["merges"] = [merge for merge in model["merges"] if symbol not in "".join(merge)]
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    assert HugeTextCut.of(AutoTokenizer.from_pretrained(folder)) is None
