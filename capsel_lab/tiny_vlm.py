"""Tiny random vision-language models built from configs, with no download (tests and the multimodal demo).

The text side reuses the bundled demo model's byte-level BPE tokenizer (capsel/models/demo/), with the
family's image tokens added as special tokens. Each folder is what `AutoModelForImageTextToText` and
`AutoProcessor` load offline: safetensors weights, config, processor (image processor, tokenizer) and a
chat template that puts images where the user turn's content parts put them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from capsel.models import demo_model_path

DEMO_TOKENIZER = demo_model_path() / "tokenizer.json"
BOS, EOS, PAD = "<s>", "</s>", "<pad>"
KINDS = ("llava", "qwen2_vl", "gemma3", "molmo2")
# Molmo2's image span: the patch, column, start and end markers its processor writes for each crop
MOLMO2_IMAGE_TOKENS = ["<im_patch>", "<im_col>", "<im_start>", "<low_res_im_start>", "<frame_start>", "<im_end>",
                       "<frame_end>", "<im_low>"]

# One user turn of content parts and an assistant opener; `image_text` is what an image part renders to.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}IMAGE_TEXT{% else %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tiny_vlm(folder: str | Path, kind: str = "llava", seed: int = 0) -> Path:
    """Save a tiny random VLM of `kind` (see KINDS) with its processor into `folder`; returns the folder.

    A qwen2_vl folder names Qwen2VLProcessor, which AutoProcessor builds only where torchvision is installed
    (transformers makes Qwen2-VL's video processor with it); `image_only_qwen2_vl_processor` loads it without.
    Built where torchvision is installed, the folder holds the video processor too.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown tiny VLM kind {kind!r}; use one of {', '.join(KINDS)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    builder = {"llava": _llava, "qwen2_vl": _qwen2_vl, "gemma3": _gemma3, "molmo2": _molmo2}[kind]
    model, processor = builder(seed)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    model.generation_config.save_pretrained(folder)
    return folder


def vlm_tokenizer(image_tokens: list[str], named: dict[str, str] | None = None):
    """The demo model's tokenizer with the turn markers and the family's image tokens as special tokens."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(DEMO_TOKENIZER), bos_token=BOS, eos_token=EOS, pad_token=PAD, model_max_length=4096,
        extra_special_tokens=named or {},
    )
    tokenizer.add_special_tokens(
        {"additional_special_tokens": ["<|user|>", "<|assistant|>", "<|end|>", *image_tokens]}
    )
    return tokenizer


def _text_config(tokenizer, hidden: int = 32, layers: int = 4) -> dict:
    return dict(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def _seeded(config, seed: int, tokenizer, image_tokens: list[str]):
    """The random model; its image tokens get zero output rows (logit 0, never the argmax of random logits).

    A trained VLM never emits its image tokens; a random one could, and a y-hat holding one would not
    match the image features when a full sequence is run again (the naive reference does).
    """
    from transformers import AutoModelForImageTextToText

    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        model.get_output_embeddings().weight[tokenizer.convert_tokens_to_ids(image_tokens)] = 0.0
    return model


def _llava(seed: int):
    """Llama text model, CLIP vision tower on 28 px images (2 x 2 patches of 14 px: 4 image tokens)."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaProcessor
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    tokenizer = vlm_tokenizer(["<image>"])
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                              image_size=28, patch_size=14, projection_dim=32)
    config = LlavaConfig(
        vision_config=vision, text_config=LlamaConfig(**_text_config(tokenizer)),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"), vision_feature_layer=-1,
        vision_feature_select_strategy="default", projector_hidden_act="gelu",
    )
    image_processor = LlavaImageProcessorPil(
        size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}, do_pad=False,
    )
    processor = LlavaProcessor(
        image_processor=image_processor, tokenizer=tokenizer, patch_size=14, vision_feature_select_strategy="default",
        num_additional_image_tokens=1, chat_template=CHAT_TEMPLATE.replace("IMAGE_TEXT", "<image>"),
    )
    return _seeded(config, seed, tokenizer, ["<image>"]), processor


def _qwen2_vl(seed: int):
    """Qwen2-VL: multimodal rotary positions; 56 px images give 4 x 4 patches, merged 2 x 2 into 4 image tokens."""
    from transformers import Qwen2VLConfig
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tokens = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
    tokenizer = vlm_tokenizer(tokens)
    ids = dict(zip(tokens, tokenizer.convert_tokens_to_ids(tokens)))
    text = _text_config(tokenizer)
    # head_dim 8 split as 2 + 1 + 1 rotary frequencies over (time, height, width)
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]}
    config = Qwen2VLConfig(
        text_config=text,
        vision_config=dict(depth=2, embed_dim=32, hidden_size=32, num_heads=4, mlp_ratio=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=56 * 56, max_pixels=56 * 56, patch_size=14, merge_size=2, temporal_patch_size=2,
    )
    template = CHAT_TEMPLATE.replace("IMAGE_TEXT", "<|vision_start|><|image_pad|><|vision_end|>")
    if importlib.util.find_spec("torchvision") is None:
        processor = _image_only_class()(image_processor=image_processor, tokenizer=tokenizer, chat_template=template)
    else:
        # with torchvision, AutoProcessor loads Qwen2-VL's video processor too, so the folder must hold one
        from transformers import Qwen2VLProcessor, Qwen2VLVideoProcessor

        video = Qwen2VLVideoProcessor(patch_size=14, merge_size=2, temporal_patch_size=2)
        processor = Qwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer, video_processor=video,
                                     chat_template=template)
    return _seeded(config, seed, tokenizer, tokens), processor


def image_only_qwen2_vl_processor(folder: str | Path):
    """A saved Qwen2-VL processor loaded without its video processor (so without torchvision)."""
    return _image_only_class().from_pretrained(str(folder))


def _image_only_class():
    """Qwen2VLProcessor minus the video processor; it saves under Qwen2VLProcessor's name for AutoProcessor."""
    from transformers import Qwen2VLProcessor

    class ImageOnlyQwen2VLProcessor(Qwen2VLProcessor):
        # The processor's parts are read off __init__'s parameters: no video_processor here.
        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

        def to_dict(self) -> dict:
            return {**super().to_dict(), "processor_class": "Qwen2VLProcessor"}

    return ImageOnlyQwen2VLProcessor


def _gemma3(seed: int):
    """Gemma 3: SigLIP on 56 px images (4 x 4 patches pooled to 4 soft tokens), images attended bidirectionally."""
    from transformers import Gemma3Config, Gemma3Processor, SiglipVisionConfig
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    named = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    tokens = list(named.values())
    tokenizer = vlm_tokenizer(tokens, named)
    ids = dict(zip(tokens, tokenizer.convert_tokens_to_ids(tokens)))
    text = _text_config(tokenizer)
    text.update(head_dim=8, sliding_window=16, query_pre_attn_scalar=8, initializer_range=0.3)
    config = Gemma3Config(
        text_config=text,
        vision_config=SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, image_size=56, patch_size=14),
        mm_tokens_per_image=4, boi_token_index=ids["<start_of_image>"], eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"],
    )
    image_processor = Gemma3ImageProcessorPil(size={"height": 56, "width": 56}, do_pan_and_scan=False)
    processor = Gemma3Processor(
        image_processor=image_processor, tokenizer=tokenizer, image_seq_length=4,
        chat_template=CHAT_TEMPLATE.replace("IMAGE_TEXT", "<start_of_image>"),
    )
    return _seeded(config, seed, tokenizer, tokens), processor


def _molmo2(seed: int):
    """Molmo2 (the paper's VLM): a 28 px crop of 2 x 2 patches pooled 2 x 2, a low-resolution view and one crop.

    transformers builds Molmo2's image and video processors only with torchvision.
    """
    if importlib.util.find_spec("torchvision") is None:
        raise RuntimeError("a tiny Molmo2 needs torchvision: transformers builds Molmo2's processors with it")
    from transformers import Molmo2Config, Molmo2ImageProcessor, Molmo2Processor, Molmo2VideoProcessor

    named = {"image_token": "<|image|>", "video_token": "<|video|>"}
    tokens = [*named.values(), *MOLMO2_IMAGE_TOKENS]
    tokenizer = vlm_tokenizer(tokens, named)
    ids = dict(zip(tokens, tokenizer.convert_tokens_to_ids(tokens)))
    text = _text_config(tokenizer)
    text.update(head_dim=8, additional_vocab_size=0, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    config = Molmo2Config(
        text_config=text,
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                           num_key_value_heads=4, head_dim=8, image_size=[28, 28], patch_size=14,
                           num_position_embeddings=4),
        adapter_config=dict(vision_feature_layer=[-1], hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                            head_dim=8, intermediate_size=64, text_hidden_size=text["hidden_size"]),
        image_start_token_id=ids["<im_start>"], low_res_image_start_token_id=ids["<low_res_im_start>"],
        image_end_token_id=ids["<im_end>"], image_patch_id=ids["<im_patch>"], frame_start_token_id=ids["<frame_start>"],
        frame_end_token_id=ids["<frame_end>"],
    )
    image_processor = Molmo2ImageProcessor(size={"height": 28, "width": 28}, max_crops=1, overlap_margins=[0, 0],
                                           patch_size=14, pooling_size=[2, 2])
    processor = Molmo2Processor(
        image_processor=image_processor, video_processor=Molmo2VideoProcessor(), tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE.replace("IMAGE_TEXT", "<|image|>"),
    )
    return _seeded(config, seed, tokenizer, tokens), processor
