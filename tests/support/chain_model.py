"""A tiny llama whose greedy continuation depends on the last token only, along a chain the test writes.

Its decoder blocks add nothing (their output projections are zero), its embeddings are one-hot and its output
head maps each token to the one that follows it in `CHAIN`: whatever the prompt, after `Answer:` it writes
`#### 72` and then `Question:`, and after a docstring's closing `\"\"\"` it writes `SOLUTION` and stops. So a
harness run over real GSM8K and HumanEval rows has a known, non-trivial score: the rows whose answer is 72 are
right, and only HumanEval/34 (`unique(l)`) passes.
"""

from __future__ import annotations

from pathlib import Path

import torch
import transformers as tf
from tokenizers import Tokenizer, models, pre_tokenizers

from tests.fixtures.tiny_models import save_model_dir

SOLUTION = "    return sorted(set(l))\n"
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]
WORDS = ["Question:", "Answer:", "####", "72", '"""', SOLUTION]
VOCAB = {token: index for index, token in enumerate(SPECIALS + WORDS)}
EOS = VOCAB["</s>"]
CHAIN = {"Answer:": "####", "####": "72", "72": "Question:", '"""': SOLUTION}
HIDDEN = 16  # at least the vocabulary, so that embeddings can be one-hot


def build_chain_tokenizer() -> tf.PreTrainedTokenizerFast:
    """Whitespace word-level tokenizer over the chain's words; no decoder, so decoding joins tokens with spaces."""
    backend = Tokenizer(models.WordLevel(VOCAB, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tf.PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>",
                                      pad_token="<pad>", unk_token="<unk>", model_max_length=4096)


def build_chain_model() -> tf.LlamaForCausalLM:
    """The one-block llama that continues each token with its successor in CHAIN (any other token with EOS)."""
    config = tf.LlamaConfig(
        vocab_size=len(VOCAB), hidden_size=HIDDEN, intermediate_size=8, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=False,
        bos_token_id=VOCAB["<s>"], eos_token_id=EOS, pad_token_id=VOCAB["<pad>"],
    )
    model = tf.LlamaForCausalLM(config).eval()
    successor = torch.full((len(VOCAB),), EOS)
    for token, follower in CHAIN.items():
        successor[VOCAB[token]] = VOCAB[follower]
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.eye(len(VOCAB), HIDDEN))
        for block in model.model.layers:
            block.self_attn.o_proj.weight.zero_()
            block.mlp.down_proj.weight.zero_()
        head = torch.zeros(len(VOCAB), HIDDEN)
        head[successor, torch.arange(len(VOCAB))] = 1.0
        model.lm_head.weight.copy_(head)
    return model


def save_chain_model(path: Path) -> Path:
    """Save the chain model and its tokenizer as a local model folder."""
    return save_model_dir(path, build_chain_model(), build_chain_tokenizer())
