"""Load a published selection with LlamaFactory's own dataset loader; print the aligned rows as JSON.

Run by the Python of LlamaFactory's separate environment (`make setup-llamafactory`), not by capsel's:
`python llamafactory_load.py <selection folder> <dataset name> <cache dir>`. It reads the folder's
dataset_info.json, loads the file it names and maps its columns (the `images` column included, each path
resolved against the folder) exactly as `llamafactory-cli train` does before tokenizing; then its multimodal
plugin checks each row's `<image>` placeholders against its images and opens them, as it does while
tokenizing. Each image is reported by its size and the sha256 of its RGB pixels.
"""

import hashlib
import importlib.machinery
import json
import os
import sys
import types


def stand_in_for_torchaudio() -> None:
    """LlamaFactory's mm_plugin imports torchaudio at the top, for audio rows alone; give it an empty module.

    The registry's torchaudio is a CUDA build that fails to load beside torch+cpu (the Makefile's vLLM note
    says the same) and capsel publishes no audio. The module has a spec so that transformers' availability
    probe reads it as absent. Only this script's own process gets it.
    """
    audio = types.ModuleType("torchaudio")
    audio.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules.setdefault("torchaudio", audio)


def main(folder: str, dataset: str, cache_dir: str) -> None:
    """Load `dataset` from `folder` with LlamaFactory's loader and print its aligned rows as one JSON line."""
    from llamafactory.data.loader import _get_merged_dataset
    from llamafactory.data.mm_plugin import get_mm_plugin
    from llamafactory.hparams import DataArguments, ModelArguments
    from transformers import Seq2SeqTrainingArguments

    data_args = DataArguments(dataset=dataset, dataset_dir=folder)
    model_args = ModelArguments(model_name_or_path="unused-by-the-loader", cache_dir=cache_dir)
    training_args = Seq2SeqTrainingArguments(output_dir=os.path.join(cache_dir, "train"), report_to="none")
    loaded = _get_merged_dataset([dataset], model_args, data_args, training_args, stage="sft")
    plugin = get_mm_plugin("base", image_token="<image>")
    rows = []
    for row in map(dict, loaded):
        images = row["_images"] or []
        plugin._validate_messages(row["_prompt"] + row["_response"], images, [], [])
        opened = plugin._regularize_images(images, image_max_pixels=2**31, image_min_pixels=0)["images"]
        row["decoded"] = [{"size": list(image.size), "rgb_sha256": hashlib.sha256(image.tobytes()).hexdigest()}
                          for image in opened]
        rows.append(row)
    print(json.dumps({"media_dir": data_args.media_dir, "rows": rows}))


if __name__ == "__main__":
    stand_in_for_torchaudio()
    os.environ.setdefault("DISABLE_VERSION_CHECK", "1")  # the pinned versions are pip's to check, not the import's
    main(*sys.argv[1:4])
