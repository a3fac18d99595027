"""`llamafactory-cli train <yaml>` with two additions, run by the Python of LlamaFactory's own environment.

capsel never imports this module: `python lf_train.py <llamafactory.yaml>` runs it in .venv-lf (`--check`
only imports the trainer, as `make setup-llamafactory` does to prove the environment). Before handing
over to LlamaFactory's own launcher it
- gives torchaudio an empty stand-in: LlamaFactory's mm_plugin imports it at the top for audio rows alone, and
  the registry's torchaudio is a CUDA build that fails beside torch+cpu (capsel trains on text and images);
- registers the `raw` prompt formats capsel scores with (docs/method.md: prompt text, then the response with no
  separator), which LlamaFactory 0.9.5 has no template for: its `empty` adds neither the BOS that the
  tokenizer's default special tokens put before the prompt nor an EOS after the response, so a model
  trained on it never learns to stop.
"""

import importlib.machinery
import sys
import types

RAW_TEMPLATES = {"capsel_raw": False, "capsel_raw_bos": True}  # name -> whether the prompt starts with BOS


def stand_in_for_torchaudio() -> None:
    """An empty torchaudio module whose spec makes transformers' availability probe read it as absent."""
    audio = types.ModuleType("torchaudio")
    audio.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules.setdefault("torchaudio", audio)


def register_raw_templates() -> None:
    """`empty` plus an EOS after the response, with and without the tokenizer's BOS before the prompt."""
    from llamafactory.data.formatter import EmptyFormatter, StringFormatter
    from llamafactory.data.template import register_template

    for name, with_bos in RAW_TEMPLATES.items():
        register_template(
            name=name,
            format_prefix=EmptyFormatter(slots=[{"bos_token"}]) if with_bos else None,
            format_assistant=StringFormatter(slots=["{{content}}", {"eos_token"}]),
        )


def main(config: str) -> None:
    """Train as `llamafactory-cli train <config>` does (`--check`: import the trainer, then stop)."""
    stand_in_for_torchaudio()
    register_raw_templates()
    from llamafactory.cli import main as cli_main
    from llamafactory.train.tuner import run_exp  # noqa: F401  (what `train` imports, loaded now to fail early)

    if config == "--check":
        print("llamafactory's trainer imports")
        return

    sys.argv = ["llamafactory-cli", "train", config]
    cli_main()


if __name__ == "__main__":
    main(sys.argv[1])
