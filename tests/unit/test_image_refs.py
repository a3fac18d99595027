"""Where a row's images are and where its text puts them: placeholders, content parts, the image field."""

from __future__ import annotations

import pytest

from capsel.ingest.image_refs import content_parts, place_images, turn_images
from capsel.ingest.reasons import Reason, Rejection
from capsel.ingest.records import FieldMap, Fields, extract_fields, parse_field_map


@pytest.mark.parametrize(
    ("instruction", "input_text", "n_images", "expected"),
    [
        ("What is it?", "", 1, "<image>\nWhat is it?"),
        ("Compare.", "", 2, "<image>\n<image>\nCompare."),
        ("<image>\nWhat is it?", "", 1, "<image>\nWhat is it?"),
        ("Is <image> like <image>?", "", 2, "Is <image> like <image>?"),
        ("Describe:", "<image>", 1, "Describe:"),  # the input's placeholder is the image's place
        ("plain", "", 0, "plain"),
    ],
)
def test_placeholders_are_kept_or_put_in_front(instruction, input_text, n_images, expected):
    assert place_images(instruction, input_text, n_images) == expected


@pytest.mark.parametrize(("instruction", "n_images", "found"), [("<image> <image>", 1, 2), ("<image>", 3, 1),
                                                                 ("<image>", 0, 1)])
def test_a_placeholder_count_that_is_neither_zero_nor_the_image_count_is_a_mismatch(instruction, n_images, found):
    got = place_images(instruction, "", n_images)
    assert isinstance(got, Rejection) and got.reason == Reason.IMAGE_PLACEHOLDER_MISMATCH
    assert got.detail == f"the text holds {found} <image> placeholder(s) for {n_images} image(s)"


def test_content_parts_put_a_placeholder_at_each_image_part_in_order():
    parts = [{"type": "text", "text": "A"}, {"type": "image", "image": "a.png"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
             {"type": "text", "text": "B"}, {"type": "image", "path": "p.png", "image": None},
             {"type": "image", "url": "s3://b/u.png"}, {"type": "image_url", "image_url": "http://x/y.png"},
             {"type": "image"}]
    got = content_parts(parts, "user")
    assert got.text == "A\n<image>\n<image>\nB\n<image>\n<image>\n<image>\n<image>"
    assert got.images == ("a.png", "data:image/png;base64,AA==", "p.png", "s3://b/u.png", "http://x/y.png", None)


@pytest.mark.parametrize(("parts", "reason"), [
    (["text"], Reason.INVALID_MESSAGES),
    ([{"type": "audio", "audio": "a.wav"}], Reason.INVALID_MESSAGES),
    ([{"type": "text", "text": 3}], Reason.NON_STRING_FIELD),
])
def test_content_parts_that_are_not_text_or_image_are_refused(parts, reason):
    got = content_parts(parts, "user")
    assert isinstance(got, Rejection) and got.reason == reason


def test_image_parts_without_an_image_take_the_field_and_a_mix_is_refused():
    assert turn_images((None, None), ("a", "b")) == ("a", "b")
    assert turn_images((None,), None) == ()
    assert turn_images(("x",), None) == ("x",)
    for parts, field in (((None, "x"), None), (("x",), ("y",))):
        got = turn_images(parts, field)
        assert isinstance(got, Rejection) and got.reason == Reason.INVALID_MESSAGES


def test_records_carry_image_references_and_text_rows_none():
    def fields_of(record, fields=FieldMap()):
        return extract_fields(record, fields, "d", 1000)

    assert fields_of({"instruction": "q", "output": "a"}).images is None
    assert fields_of({"instruction": "q", "output": "a", "image": "x.png"}).images == ("x.png",)
    assert fields_of({"instruction": "q", "output": "a", "images": ["x", "y"], "image": "z"}).images == ("x", "y")
    assert fields_of({"instruction": "q", "output": "a", "images": []}).images == ()
    picture = parse_field_map(["images=picture"])
    assert fields_of({"instruction": "q", "output": "a", "picture": b"\x89PNG"}, picture).images == (b"\x89PNG",)
    chat = {"messages": [{"role": "user", "content": [{"type": "image", "image": "i.png"},
                                                      {"type": "text", "text": "Q"}]},
                         {"role": "assistant", "content": [{"type": "text", "text": "A"}]}]}
    assert fields_of(chat) == Fields("d", "<image>\nQ", "", "A", ("i.png",))
    with_image_answer = {"messages": [chat["messages"][0], {"role": "assistant", "content": [{"type": "image"}]}]}
    got = fields_of(with_image_answer)
    assert isinstance(got, Rejection) and got.reason == Reason.INVALID_MESSAGES and got.domain == "d"
