"""Where a row's images are (its `images`/`image` field, or its chat turn's image parts) and where its text puts them.

Nothing here reads an image: a reference is a path, a URL, bytes, or Hugging Face's image struct {bytes, path},
read later by `capsel.ingest.image_loading`.
"""

from __future__ import annotations

from typing import NamedTuple

from capsel.ingest.reasons import Reason, Rejection

# LLaVA's convention: one literal placeholder per image, where the image goes in the prompt.
IMAGE_PLACEHOLDER = "<image>"
_IMAGE_PART_TYPES = frozenset({"image", "image_url"})
# Keys an image part may hold its image under (the Hugging Face chat-template forms), first non-null wins.
_IMAGE_PART_KEYS = ("image", "path", "url")


class ContentParts(NamedTuple):
    """A chat turn's content parts as one text (`<image>` at each image part) and each image part's payload
    (None where the part only marks a place, its image given by the row's `images` field)."""

    text: str
    images: tuple[object, ...]


def field_images(value: object) -> tuple[object, ...]:
    """An image field's references: a list holds one per item, anything else is one."""
    return tuple(value) if isinstance(value, list) else (value,)


def content_parts(content: list, role: str) -> ContentParts | Rejection:
    """The text and images of a content-part list; parts are joined by newlines, as `<image>\\n` leads a text."""
    pieces: list[str] = []
    images: list[object] = []
    for part in content:
        if not isinstance(part, dict):
            return Rejection(Reason.INVALID_MESSAGES, f"a {role} content part is {type(part).__name__}, not an object")
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if not isinstance(text, str):
                return Rejection(Reason.NON_STRING_FIELD, f"a {role} text part holds {type(text).__name__}, "
                                                          "not a string")
            pieces.append(text)
        elif kind in _IMAGE_PART_TYPES:
            pieces.append(IMAGE_PLACEHOLDER)
            images.append(_part_image(part))
        else:
            return Rejection(Reason.INVALID_MESSAGES,
                             f"a {role} content part has type {kind!r}; text, image and image_url parts are read")
    return ContentParts("\n".join(pieces), tuple(images))


def _part_image(part: dict) -> object:
    if part.get("type") == "image_url":
        url = part.get("image_url")
        return url.get("url") if isinstance(url, dict) else url
    return next((part[key] for key in _IMAGE_PART_KEYS if part.get(key) is not None), None)


def turn_images(parts: tuple[object, ...], field: tuple[object, ...] | None) -> tuple[object, ...] | Rejection:
    """A chat row's image references: its image parts' payloads, or the `images` field where the parts only mark
    places; a row mixing the two has no single order, so it is refused."""
    given = [image for image in parts if image is not None]
    if not given:
        return field if field is not None else ()
    if len(given) < len(parts):
        return Rejection(Reason.INVALID_MESSAGES, "some image parts hold an image and some do not")
    if field is not None:
        return Rejection(Reason.INVALID_MESSAGES, "images both in the turn's image parts and in an images field")
    return parts


def place_images(instruction: str, input_text: str, n_images: int) -> str | Rejection:
    """The instruction with one `<image>` per image: as written when the text (instruction and input) holds
    exactly that many, else `<image>\\n` per image in front of an instruction that holds none."""
    found = instruction.count(IMAGE_PLACEHOLDER) + input_text.count(IMAGE_PLACEHOLDER)
    if found == n_images:
        return instruction
    if found == 0:
        return f"{IMAGE_PLACEHOLDER}\n" * n_images + instruction
    return Rejection(Reason.IMAGE_PLACEHOLDER_MISMATCH,
                     f"the text holds {found} {IMAGE_PLACEHOLDER} placeholder(s) for {n_images} image(s)")
