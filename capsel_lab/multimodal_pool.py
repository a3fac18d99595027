"""The multimodal demo's pool: pictures of shapes and price labels drawn with Pillow, questions about them.

Every question names what it asks about, so no two clean rows share a normalised question (the paper's dedup
key ignores the image: identical questions over different pictures merge). The pool also holds one such
repeat, a two-picture question per few labels, and one row for each image problem ingest quarantines.
"""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw

SHAPES = ("circle", "square", "triangle", "diamond")
CORNERS = {"top left": (0, 0), "top right": (1, 0), "bottom left": (0, 1), "bottom right": (1, 1)}
COLOURS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220), "orange": (240, 150, 30),
           "purple": (140, 60, 180)}
ITEMS = ("lamp", "kettle", "chair", "notebook", "umbrella", "blanket", "teapot", "backpack", "candle", "mirror",
         "pillow", "toaster", "basket", "clock", "scarf", "wallet")
SIZE = 64
POOL_FILE = "pool.jsonl"


def stage_multimodal_pool(folder: Path) -> tuple[list[Path], list[dict]]:
    """Write the pictures under folder/images and the rows to folder/pool.jsonl; returns the files and rows."""
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    rows = [*_shape_rows(images), *_label_rows(images), *_problem_rows(images)]
    pool = folder / POOL_FILE
    pool.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return [pool], rows


def _shape_rows(images: Path) -> list[dict]:
    rows = []
    colours = list(COLOURS)
    for index, (shape, corner) in enumerate((s, c) for s in SHAPES for c in CORNERS):
        colour = colours[index % len(colours)]
        name = f"shape-{index:02d}.png"
        _shape_picture(shape, CORNERS[corner], COLOURS[colour], colours[(index + 2) % len(colours)]).save(images / name)
        rows.append({"domain": "shapes", "images": [f"images/{name}"], "lab_label": "clean",
                     "instruction": f"<image>\nWhat colour is the {shape} in the {corner} of the picture?",
                     "response": f"The {shape} in the {corner} of the picture is {colour}, "
                                 "drawn on a white background."})
    # the paper's dedup: the first question again, over another picture, merges into the first row
    name = "shape-repeat.png"
    _shape_picture(SHAPES[0], (1, 1), COLOURS["purple"], "green").save(images / name)
    rows.append({**rows[0], "images": [f"images/{name}"], "lab_label": "duplicate",
                 "response": "The circle in the top left of the picture is purple, drawn on a white background."})
    return rows


def _shape_picture(shape: str, corner: tuple[int, int], colour: tuple[int, int, int], other: str) -> Image.Image:
    picture = Image.new("RGB", (SIZE, SIZE), "white")
    draw = ImageDraw.Draw(picture)
    half = SIZE // 2
    x, y = corner[0] * half + 4, corner[1] * half + 4
    box = (x, y, x + half - 8, y + half - 8)
    if shape == "circle":
        draw.ellipse(box, fill=colour)
    elif shape == "square":
        draw.rectangle(box, fill=colour)
    elif shape == "triangle":
        draw.polygon([(x + (half - 8) // 2, y), (x, y + half - 8), (x + half - 8, y + half - 8)], fill=colour)
    else:
        mid = (half - 8) // 2
        draw.polygon([(x + mid, y), (x + half - 8, y + mid), (x + mid, y + half - 8), (x, y + mid)], fill=colour)
    # a second, smaller mark in the opposite corner, so the question has something to tell apart
    ox, oy = (1 - corner[0]) * half + half // 2, (1 - corner[1]) * half + half // 2
    draw.rectangle((ox - 4, oy - 4, ox + 4, oy + 4), fill=COLOURS[other])
    return picture


def _label_picture(item: str, price: int) -> Image.Image:
    picture = Image.new("RGB", (SIZE * 2, SIZE // 2), (250, 245, 220))
    draw = ImageDraw.Draw(picture)
    draw.rectangle((1, 1, SIZE * 2 - 2, SIZE // 2 - 2), outline=(90, 90, 90))
    draw.text((6, 10), f"{item}: ${price}", fill="black")
    return picture


def _label_rows(images: Path) -> list[dict]:
    prices = {item: 5 + (index * 7) % 40 for index, item in enumerate(ITEMS)}
    for item, price in prices.items():
        _label_picture(item, price).save(images / f"label-{item}.png")
    rows = [{"domain": "labels", "images": [f"images/label-{item}.png"], "lab_label": "clean",
             "instruction": f"<image>\nHow much does the {item} cost, according to the price label in the picture?",
             "response": f"According to the label, the {item} costs {price} dollars."}
            for item, price in prices.items()]
    pairs = list(zip(ITEMS[0::4], ITEMS[1::4]))
    for first, second in pairs:
        dearer = max((first, second), key=prices.__getitem__)
        rows.append({"domain": "labels", "images": [f"images/label-{first}.png", f"images/label-{second}.png"],
                     "lab_label": "clean",
                     "instruction": f"<image> <image>\nWhich label shows the higher price, "
                                    f"the {first} or the {second}?",
                     "response": f"The {dearer} costs more: {prices[dearer]} dollars against "
                                 f"{min(prices[first], prices[second])}."})
    return rows


def _problem_rows(images: Path) -> list[dict]:
    (images / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n this file was cut off before its first chunk")
    problem = {"domain": "labels", "lab_label": "malformed",
               "response": "There is no readable picture to answer this question from."}
    return [
        {**problem, "images": ["images/not-there.png"],
         "instruction": "<image>\nWhat is written on the missing label?"},
        {**problem, "images": ["images/broken.png"],
         "instruction": "<image>\nWhat is written on the broken label?"},
        {**problem, "images": ["images/label-lamp.png"],
         "instruction": "<image> <image>\nCompare the two labels, of which only one was given."},
    ]
