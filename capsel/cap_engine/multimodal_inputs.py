"""Token ids and image tensors of a candidate scored on a vision-language model (issue 21).

The instruction holds one literal `<image>` per image. The user turn becomes content parts (an image
part at each placeholder, text parts between), rendered by the processor's chat template with the
generation prompt; the processor then expands each image into its tokens and makes the pixel tensors.
The response ids are the bare response's, first R, exactly as for text. Truncation keeps the last P
text ids (image tokens do not count) and never cuts through an image: when image tokens would fall
before the cut, whole images are dropped from the front and the prompt is built again without them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from PIL import Image

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.inputs import (
    SHORT_PROMPT,
    SHORT_RESPONSE,
    CandidateText,
    ScoringInput,
    build_inputs,
    prompt_text,
    response_token_ids,
)
from capsel.cap_engine.prompt_format import CHAT, resolve_prompt_format
from capsel.cap_engine.results import GenerationResult
from capsel.errors import CapselError
from capsel.models.loading import ModelInfo

IMAGE_PLACEHOLDER = "<image>"
# Processor attributes naming the tokens that open, fill or close an image's span.
_MARKER_ATTRIBUTES = ("image_token", "boi_token", "eoi_token", "image_start_token", "image_end_token",
                      "vision_start_token", "vision_end_token")
_MARKER_TOKENS = ("<|vision_start|>", "<|vision_end|>")


@dataclass(frozen=True)
class MultimodalInput(ScoringInput):
    """A ScoringInput for a VLM: its prompt ids hold the expanded image tokens, `vision` the processor's tensors."""

    vision: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    images_dropped: int = 0


@dataclass(frozen=True)
class MultimodalGeneration(GenerationResult):
    """A stored or fresh y-hat of a VLM candidate, with the prompt's processor tensors for scoring it."""

    vision: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


def with_vision(generation: GenerationResult, prepared: MultimodalInput) -> MultimodalGeneration:
    """A stored generation joined to its candidate's prepared input (same prompt ids), ready for engine.score."""
    if generation.excluded_reason is None and list(generation.prompt_ids) != list(prepared.prompt_ids):
        raise CapselError(f"candidate {generation.candidate_id}: the stored prompt ids differ from the prepared ones")
    fields = {name: getattr(generation, name) for name in GenerationResult.__dataclass_fields__}
    fields["images_dropped"] = prepared.images_dropped
    return MultimodalGeneration(**fields, vision=prepared.vision)


def build_multimodal_inputs(
    candidates: Sequence[CandidateText], processor, config: ScoringConfig
) -> list[MultimodalInput]:
    """Prompt ids (images expanded), processor tensors and response ids of each candidate, or its exclusion."""
    if resolve_prompt_format(config.prompt_format, processor) != CHAT:
        raise CapselError("a vision-language model is scored in the chat format: its processor's template places "
                          "the images; raw prompts are not supported for it")
    responses = response_token_ids(processor.tokenizer, [c.response for c in candidates])
    return [_one(candidate, response, processor, config) for candidate, response in zip(candidates, responses)]


def model_inputs(candidates: Sequence[CandidateText], info: ModelInfo, config: ScoringConfig) -> list[ScoringInput]:
    """Candidates tokenised and truncated for the model `info` describes: a VLM's through its processor (with or
    without images), a text model's through its tokenizer (which refuses candidates with images)."""
    if info.is_multimodal:
        return list(build_multimodal_inputs(candidates, info.processor, config))
    if any(candidate.images for candidate in candidates):
        raise CapselError("candidates with images need a vision-language model; this one is text-only")
    return build_inputs(candidates, info.tokenizer, config)


def image_marker_ids(processor) -> frozenset[int]:
    """Ids of the tokens that make up an image's span in the prompt (image tokens, begin/end markers)."""
    tokenizer = processor.tokenizer
    # Gemma 3's processor names only the begin token; its tokenizer names the soft image and end tokens.
    tokens = [getattr(owner, name, None) for owner in (processor, tokenizer) for name in _MARKER_ATTRIBUTES]
    tokens += [token for token in _MARKER_TOKENS if token in tokenizer.get_vocab()]
    ids = {tokenizer.convert_tokens_to_ids(token) for token in tokens if isinstance(token, str)}
    # Molmo2's processor lists its span's ids (patches, columns, crop starts and ends) itself
    ids.update(getattr(processor, "image_token_ids", None) or [])
    return frozenset(i for i in ids if i is not None and i != tokenizer.unk_token_id)


def content_parts(text: str, n_images: int) -> list[dict]:
    """The user turn as content parts: an image part at each `<image>`, the text between as text parts."""
    pieces = text.split(IMAGE_PLACEHOLDER)
    if len(pieces) - 1 != n_images:
        raise CapselError(f"the prompt has {len(pieces) - 1} {IMAGE_PLACEHOLDER} placeholders for {n_images} images")
    parts: list[dict] = []
    for index, piece in enumerate(pieces):
        if index:
            parts.append({"type": "image"})
        if piece:
            parts.append({"type": "text", "text": piece})
    return parts


def render_prompt(processor, text: str, images: Sequence[Image.Image]) -> dict[str, Any]:
    """The processor's output (ids, tensors) for one user turn with its images, after the generation prompt."""
    conversation = [{"role": "user", "content": content_parts(text, len(images))}]
    rendered = processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
    bos = processor.tokenizer.bos_token
    # As the processor's own tokenize route does: a template that spells BOS gets no second one.
    special = not (bos is not None and rendered.startswith(bos))
    return dict(processor(text=[rendered], images=list(images) or None, return_tensors="pt",
                          add_special_tokens=special))


def open_images(paths: Sequence[str]) -> list[Image.Image]:
    """Each image file decoded to RGB."""
    images = []
    for path in paths:
        with Image.open(path) as image:
            images.append(image.convert("RGB"))
    return images


def _one(candidate: CandidateText, response: list[int], processor, config: ScoringConfig) -> MultimodalInput:
    text = prompt_text(candidate.instruction, candidate.input)
    images = open_images(candidate.images)
    markers = image_marker_ids(processor)
    full_length = None
    dropped = 0
    while True:
        encoded = render_prompt(processor, text, images)
        ids = [int(i) for i in encoded.pop("input_ids")[0]]
        encoded.pop("attention_mask", None)
        full_length = len(ids) if full_length is None else full_length
        cut = _text_cut(ids, markers, config.prompt_tokens)
        if not any(token in markers for token in ids[:cut]):
            break
        # Image tokens before the cut: the first image goes, its placeholder with it, and the prompt is rebuilt.
        text = text.replace(IMAGE_PLACEHOLDER, "", 1)
        images = images[1:]
        dropped += 1
    reason = None
    if full_length < config.min_prompt_tokens:
        reason = SHORT_PROMPT
    elif len(response) < config.min_response_tokens:
        reason = SHORT_RESPONSE
    return MultimodalInput(
        candidate_id=candidate.candidate_id, prompt_ids=ids[cut:], response_ids=response[: config.horizon],
        excluded_reason=reason, vision=_kept(encoded, cut), images_dropped=dropped,
    )


def _kept(encoded: dict[str, Any], cut: int) -> dict[str, Any]:
    """The processor tensors for the kept prompt: per-token type ids cut like the ids, image tensors whole."""
    return {name: value[:, cut:] if name.endswith("token_type_ids") else value for name, value in encoded.items()}


def _text_cut(ids: list[int], markers: frozenset[int], keep: int) -> int:
    """Index where the kept prompt starts: the last `keep` text ids (image tokens not counted) stay."""
    text_positions = [position for position, token in enumerate(ids) if token not in markers]
    return 0 if len(text_positions) <= keep else text_positions[-keep]
