"""Joining VLM prompts' processor tensors for one batch, and grouping prompts whose images stack."""

from __future__ import annotations

import torch

from capsel.cap_engine.vision_batch import grouped, image_shape, joined_tensors


def test_per_token_tensors_are_left_padded_and_image_tensors_stacked_in_row_order():
    first = {"pixel_values": torch.full((2, 3, 4, 4), 1.0), "token_type_ids": torch.tensor([[0, 1, 1, 0]])}
    second = {"token_type_ids": torch.tensor([[0, 0]])}  # a prompt without pictures
    third = {"pixel_values": torch.full((1, 3, 4, 4), 3.0), "token_type_ids": torch.tensor([[1, 0, 0]])}
    joined = joined_tensors([first, second, third], width=5, device=torch.device("cpu"))
    assert torch.equal(joined["token_type_ids"], torch.tensor([[0, 0, 1, 1, 0], [0, 0, 0, 0, 0], [0, 0, 1, 0, 0]]))
    assert joined["pixel_values"].shape == (3, 3, 4, 4)
    assert joined["pixel_values"][:, 0, 0, 0].tolist() == [1.0, 1.0, 3.0]


def test_prompts_are_grouped_by_image_shape_and_plain_prompts_join_the_largest_group():
    small = {"pixel_values": torch.zeros(1, 3, 8, 8)}
    large = {"pixel_values": torch.zeros(1, 3, 16, 16)}
    items = [("a", small), ("b", large), ("c", {}), ("d", small), ("e", None)]
    groups = grouped(items, lambda item: image_shape(item[1]))
    assert [[name for name, _ in group] for group in groups] == [["a", "d", "c", "e"], ["b"]]
    assert grouped([("c", {})], lambda item: image_shape(item[1])) == [[("c", {})]]
    assert grouped([], lambda item: ()) == []
