"""Rows with images into real DuckDB files: every source form, the <image> placeholders, the store beside the DB,
the image quarantine reasons, the paper's dedup (images not in the key) and its text+images option, reruns."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from capsel.db import open_db
from capsel.errors import CapselError
from capsel.image_store.store import ImageStore, image_store_dir
from capsel.ingest.dedup_key import candidate_id, dedup_key
from capsel.ingest.image_access import ImageAccess
from capsel.ingest.pipeline import IngestOptions, ingest
from capsel.ingest.reasons import IMAGE_REASONS, Reason
from capsel.lineage import trace
from capsel.store.image_files import attach_image_files
from tests.integration.pool_files import table, write_jsonl
from tests.support.interrupts import interrupt_after_first_chunk

D = IngestOptions(domain="vqa")


def png(color: tuple[int, int, int], size: tuple[int, int] = (6, 4)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


RED, GREEN, BLUE, GREY = png((255, 0, 0)), png((0, 255, 0)), png((0, 0, 255)), png((9, 9, 9), (3, 3))


@pytest.fixture
def pictures(tmp_path):
    """Four PNG files: red and green beside the pool in img/, blue and grey in a folder elsewhere (read only when it
    is an image root: see `elsewhere_allowed`)."""
    (tmp_path / "pool" / "img").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "pool" / "img" / "red.png").write_bytes(RED)
    (tmp_path / "pool" / "img" / "green.png").write_bytes(GREEN)
    (tmp_path / "elsewhere" / "blue.png").write_bytes(BLUE)
    (tmp_path / "elsewhere" / "grey.png").write_bytes(GREY)
    return tmp_path


def elsewhere_allowed(pictures) -> IngestOptions:
    """Options whose image roots hold the folder outside the pool, as --image-root or CAPSEL_IMAGE_ROOTS give it."""
    return IngestOptions(domain="vqa", image_access=ImageAccess(roots=(str(pictures / "elsewhere"),)))


def candidates_by_row(con) -> dict[int, dict]:
    return {row["source_row"]: row for row in table(con, "candidates").to_dict("records")}


def image_list(row: dict) -> list[str] | None:
    value = row["image_sha256"]
    return None if value is None else list(value)


def assert_stored(con, db_path, *images: bytes) -> None:
    """The images table and the store hold exactly these images, byte for byte."""
    rows = table(con, "images", order=("sha256",)).to_dict("records")
    assert sorted(row["sha256"] for row in rows) == sorted({sha(data) for data in images})
    store = ImageStore(image_store_dir(db_path))
    for row in rows:
        data = next(data for data in images if sha(data) == row["sha256"])
        assert store.path(row["sha256"], row["format"]).read_bytes() == data
        assert (row["format"], row["n_bytes"]) == ("png", len(data))
        assert (row["width"], row["height"]) == Image.open(io.BytesIO(data)).size


def test_llava_fields_with_relative_absolute_and_file_url_paths(db, tmp_path, pictures):
    blue, grey = pictures / "elsewhere" / "blue.png", pictures / "elsewhere" / "grey.png"
    rows = [
        {"image": "img/red.png", "instruction": "What colour is it?", "output": "red"},
        {"images": ["img/green.png", str(blue)], "instruction": "Compare <image> with <image>.", "output": "g, b"},
        {"images": [f"file://{grey}"], "instruction": "Describe it.", "input": "<image>", "output": "grey"},
        {"instruction": "A text-only row.", "output": "text"},
        {"images": [], "instruction": "An empty list is text-only.", "output": "text"},
    ]
    path = write_jsonl(pictures / "pool" / "pool.jsonl", rows)
    report = ingest(db, [path], elsewhere_allowed(pictures))
    got = candidates_by_row(db)
    assert got[1]["instruction"] == "<image>\nWhat colour is it?"  # no placeholder: one in front per image
    assert image_list(got[1]) == [sha(RED)]
    assert got[2]["instruction"] == "Compare <image> with <image>." and image_list(got[2]) == [sha(GREEN), sha(BLUE)]
    assert got[3]["instruction"] == "Describe it." and got[3]["input"] == "<image>"  # the input's placeholder counts
    assert image_list(got[3]) == [sha(GREY)]
    for text_row, instruction in ((4, "A text-only row."), (5, "An empty list is text-only.")):
        assert image_list(got[text_row]) is None
        assert got[text_row]["candidate_id"] == candidate_id("vqa", dedup_key(instruction))  # ids as before images
    assert got[1]["candidate_id"] == candidate_id("vqa", dedup_key("<image>\nWhat colour is it?"))
    assert_stored(db, tmp_path / "capsel.duckdb", RED, GREEN, BLUE, GREY)
    assert report.totals().n_inserted == 5
    # what scoring reads (capsel.store.image_files): the files in <image> order, none for a text-only row
    pending = attach_image_files(db, [{"candidate_id": got[2]["candidate_id"]}, {"candidate_id": got[4]["candidate_id"]}])
    assert [open(p, "rb").read() for p in pending[0]["images"]] == [GREEN, BLUE] and pending[1]["images"] == ()


def test_parquet_binary_list_of_binary_and_hf_image_struct(db, tmp_path, pictures):
    (pictures / "pool" / "img" / "grey.png").write_bytes(GREY)
    struct = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    pq.write_table(pa.table({
        "instruction": ["one", "two", "three"], "output": ["a", "b", "c"],
        "image": pa.array([RED, None, None], pa.binary()),
    }), pictures / "pool" / "plain.parquet")
    pq.write_table(pa.table({
        "instruction": ["Left <image>, right <image>"], "output": ["x"],
        "images": pa.array([[GREEN, BLUE]], pa.list_(pa.binary())),
    }), pictures / "pool" / "listed.parquet")
    pq.write_table(pa.table({
        "instruction": ["hf bytes", "hf path only", "hf list"], "output": ["x", "y", "z"],
        "images": pa.array([[{"bytes": BLUE, "path": "ignored.png"}], [{"bytes": None, "path": "img/grey.png"}],
                            [{"bytes": RED, "path": None}, {"bytes": GREEN, "path": None}]], pa.list_(struct)),
    }), pictures / "pool" / "hf.parquet")
    pq.write_table(pa.table({
        "instruction": ["one struct"], "output": ["s"], "image": pa.array([{"bytes": GREEN, "path": None}], struct),
    }), pictures / "pool" / "single.parquet")
    names = ("plain.parquet", "listed.parquet", "hf.parquet", "single.parquet")
    ingest(db, [pictures / "pool" / name for name in names], D)
    by_text = {row["instruction"]: image_list(row) for row in table(db, "candidates").to_dict("records")}
    assert by_text == {
        "<image>\none": [sha(RED)], "two": None, "three": None,
        "Left <image>, right <image>": [sha(GREEN), sha(BLUE)],
        "<image>\nhf bytes": [sha(BLUE)], "<image>\nhf path only": [sha(GREY)],
        "<image>\n<image>\nhf list": [sha(RED), sha(GREEN)], "<image>\none struct": [sha(GREEN)],
    }
    assert_stored(db, tmp_path / "capsel.duckdb", RED, GREEN, BLUE, GREY)


def test_chat_content_parts_hold_images_in_every_form(db, tmp_path, pictures):
    data_url = "data:image/png;base64," + base64.b64encode(BLUE).decode()
    grey = pictures / "elsewhere" / "grey.png"

    def chat(parts, answer="ok", **extra):
        return {"messages": [{"role": "user", "content": parts}, {"role": "assistant", "content": answer}], **extra}

    rows = [
        chat([{"type": "image", "image": "img/red.png"}, {"type": "text", "text": "What is this?"}]),
        chat([{"type": "text", "text": "Between"}, {"type": "image", "path": "img/green.png"},
              {"type": "text", "text": "and"}, {"type": "image_url", "image_url": {"url": data_url}},
              {"type": "text", "text": "which is bluer?"}], [{"type": "text", "text": "the second"}]),
        chat([{"type": "image", "url": f"file://{grey}"}, {"type": "text", "text": "grey?"}]),
        # TRL's form: image parts only mark places, the row's `images` field holds the images
        chat([{"type": "image"}, {"type": "text", "text": "From the field"}], images=["img/red.png"]),
        {"conversations": [{"from": "human", "value": "<image>\nShareGPT with a field"}, {"from": "gpt", "value": "a"}],
         "image": "img/green.png"},
    ]
    ingest(db, [write_jsonl(pictures / "pool" / "chat.jsonl", rows)], elsewhere_allowed(pictures))
    got = candidates_by_row(db)
    assert got[1]["instruction"] == "<image>\nWhat is this?" and image_list(got[1]) == [sha(RED)]
    assert got[2]["instruction"] == "Between\n<image>\nand\n<image>\nwhich is bluer?"
    assert image_list(got[2]) == [sha(GREEN), sha(BLUE)] and got[2]["response"] == "the second"
    assert image_list(got[3]) == [sha(GREY)]
    assert got[4]["instruction"] == "<image>\nFrom the field" and image_list(got[4]) == [sha(RED)]
    assert got[5]["instruction"] == "<image>\nShareGPT with a field" and image_list(got[5]) == [sha(GREEN)]
    assert_stored(db, tmp_path / "capsel.duckdb", RED, GREEN, BLUE, GREY)


def test_parquet_chat_parts_as_hf_structs(db, pictures):
    part = pa.struct([("type", pa.string()), ("text", pa.string()),
                      ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())]))])
    turn = pa.struct([("role", pa.string()), ("content", pa.list_(part))])
    messages = [[
        {"role": "user", "content": [{"type": "text", "text": "Count:", "image": None},
                                     {"type": "image", "text": None, "image": {"bytes": RED, "path": None}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "one", "image": None}]},
    ]]
    pq.write_table(pa.table({"messages": pa.array(messages, pa.list_(turn))}), pictures / "pool" / "chat.parquet")
    ingest(db, [pictures / "pool" / "chat.parquet"], D)
    [row] = table(db, "candidates").to_dict("records")
    assert (row["instruction"], row["response"], image_list(row)) == ("Count:\n<image>", "one", [sha(RED)])


def image_reason_pool(pictures):
    """One row per image quarantine reason (and a good row), with the detail each must give."""
    (pictures / "pool" / "img" / "broken.png").write_bytes(png((1, 2, 3), (64, 64))[:-20])  # cut off: verify fails
    (pictures / "pool" / "img" / "text.png").write_text("not an image")
    noise = Image.frombytes("RGB", (40, 40), random.Random(0).randbytes(40 * 40 * 3))  # noise: a large file
    buffer = io.BytesIO()
    noise.save(buffer, format="PNG")
    (pictures / "pool" / "img" / "big.png").write_bytes(buffer.getvalue())
    (pictures / "pool" / "img" / "wide.png").write_bytes(png((1, 2, 3), (300, 2)))
    rows = [
        {"image": "img/red.png", "instruction": "fine", "output": "a"},
        {"image": "img/nowhere.png", "instruction": "q1", "output": "a"},
        {"images": ["img/red.png", None], "instruction": "q2", "output": "a"},
        {"image": "img/text.png", "instruction": "q3", "output": "a"},
        {"image": "img/broken.png", "instruction": "q4", "output": "a"},
        {"image": "data:image/png;base64,!!!", "instruction": "q5", "output": "a"},
        {"image": "img/big.png", "instruction": "q6", "output": "a"},
        {"image": "img/wide.png", "instruction": "q7", "output": "a"},
        {"images": ["img/red.png"], "instruction": "<image> and <image>", "output": "a"},
        {"messages": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "q9"}]},
                      {"role": "assistant", "content": "a"}]},
        {"image": "../elsewhere/blue.png", "instruction": "q10", "output": "a"},
        {"image": "img", "instruction": "q11", "output": "a"},
        {"images": ["img/red.png"] * 4, "instruction": "q12", "output": "a"},
    ]
    expected = {
        2: (Reason.IMAGE_MISSING, "image 1 (img/nowhere.png): no such file"),
        3: (Reason.IMAGE_MISSING, "image 2 (None): no image given (null)"),
        4: (Reason.IMAGE_UNREADABLE, "image 1 (img/text.png): Pillow recognises no image format in it"),
        5: (Reason.IMAGE_UNREADABLE, "image 1 (img/broken.png): Pillow cannot read it (OSError: Truncated File Read)"),
        6: (Reason.IMAGE_UNREADABLE, "image 1 (data:image/png;base64,!!!): bad base64"),
        7: (Reason.IMAGE_OVERSIZED, "image 1 (img/big.png): "),
        8: (Reason.IMAGE_OVERSIZED, "image 1 (img/wide.png): 300x2 = 600 pixels, over the pixel limit "
                                    "CAPSEL_MAX_IMAGE_PIXELS=500"),
        9: (Reason.IMAGE_PLACEHOLDER_MISMATCH, "the text holds 2 <image> placeholder(s) for 1 image(s)"),
        10: (Reason.IMAGE_PLACEHOLDER_MISMATCH, "the text holds 1 <image> placeholder(s) for 0 image(s)"),
        11: (Reason.IMAGE_REFUSED, f"image 1 (../elsewhere/blue.png): {pictures.resolve()}/elsewhere/blue.png is "
                                   "outside the pool's folder and the image roots"),
        12: (Reason.IMAGE_NOT_A_FILE, "image 1 (img): a folder, not a regular file"),
        13: (Reason.IMAGE_ROW_LIMIT, "4 images, over the limit CAPSEL_MAX_IMAGES_PER_ROW=3"),
    }
    return write_jsonl(pictures / "pool" / "bad.jsonl", rows), expected


def test_each_image_reason_lands_in_quarantine_with_a_one_line_detail(db, tmp_path, pictures):
    path, expected = image_reason_pool(pictures)
    big = len((pictures / "pool" / "img" / "big.png").read_bytes())
    options = IngestOptions(domain="vqa", max_image_bytes=big - 1, max_image_pixels=500, max_images_per_row=3)
    report = ingest(db, [path], options)
    assert {reason for reason, _ in expected.values()} == IMAGE_REASONS
    quarantine = {row["source_row"]: row for row in table(db, "quarantine").to_dict("records")}
    assert {row: (Reason(q["reason"]), q["detail"]) for row, q in quarantine.items()}.keys() == expected.keys()
    for row, (reason, detail) in expected.items():
        assert quarantine[row]["reason"] == reason, row
        assert quarantine[row]["detail"].startswith(detail), (row, quarantine[row]["detail"])
        assert "\n" not in quarantine[row]["detail"] and quarantine[row]["domain"] == "vqa"
    assert quarantine[7]["detail"] == (f"image 1 (img/big.png): {big:,} bytes, over the byte limit "
                                       f"CAPSEL_MAX_IMAGE_BYTES={big - 1:,}")
    assert json.loads(quarantine[2]["raw_text"])["image"] == "img/nowhere.png"
    # only the good row's image is stored: a row quarantined on its second image leaves no file for its first
    assert_stored(db, tmp_path / "capsel.duckdb", RED)
    [counts] = report.domains
    assert (counts.n_read, counts.n_inserted, counts.n_quarantined) == (13, 1, 12)


def test_oversized_data_url_and_parquet_bytes_are_judged_before_decoding(db, pictures):
    data_url = "data:image/png;base64," + base64.b64encode(RED).decode()
    write_jsonl(pictures / "pool" / "a.jsonl", [{"image": data_url, "instruction": "q", "output": "a"}])
    pq.write_table(pa.table({"instruction": ["p"], "output": ["a"], "image": pa.array([RED], pa.binary())}),
                   pictures / "pool" / "b.parquet")
    ingest(db, [pictures / "pool" / "a.jsonl", pictures / "pool" / "b.parquet"],
           IngestOptions(domain="vqa", max_image_bytes=len(RED) - 1))
    reasons = table(db, "quarantine")
    assert reasons["reason"].tolist() == ["image_oversized"] * 2
    parquet_raw = json.loads(reasons["raw_text"].tolist()[1])
    assert parquet_raw["image"] == f"<{len(RED):,} bytes>"  # the quarantined row keeps its bytes' size, not them


def test_same_question_over_different_images_merges_by_default_as_the_paper_does(tmp_path, pictures):
    rows = [
        {"image": "img/red.png", "instruction": "What colour?", "output": "red"},
        {"image": "img/green.png", "instruction": "what   COLOUR?", "output": "green"},
        {"image": "img/red.png", "instruction": "What colour?", "output": "red again"},
    ]
    path = write_jsonl(pictures / "pool" / "pool.jsonl", rows)
    outcomes = {}
    for mode in ("text", "text+images"):
        con = open_db(tmp_path / f"{mode.replace('+', '_')}.duckdb")
        report = ingest(con, [path], IngestOptions(domain="vqa", dedup_key=mode))
        outcomes[mode] = (report, table(con, "candidates"), table(con, "duplicates"), len(table(con, "images")))
        con.close()
    report, candidates, duplicates, n_images = outcomes["text"]
    assert candidates["source_row"].tolist() == [1] and image_list(candidates.iloc[0]) == [sha(RED)]
    assert duplicates["source_row"].tolist() == [2, 3]
    assert set(duplicates["candidate_id"]) == {candidates["candidate_id"].iloc[0]}
    assert n_images == 2  # the duplicate's image is stored and recorded too: the table lists what the store holds
    report, candidates, duplicates, _ = outcomes["text+images"]
    assert candidates["source_row"].tolist() == [1, 2]
    assert [image_list(row) for _, row in candidates.iterrows()] == [[sha(RED)], [sha(GREEN)]]
    assert duplicates["source_row"].tolist() == [3]
    key = dedup_key("<image>\nWhat colour?") + "\x1f" + sha(RED)
    assert candidates["dedup_key"].iloc[0] == key and candidates["candidate_id"].iloc[0] == candidate_id("vqa", key)
    assert report.totals().n_duplicates == 1


def test_text_only_ids_do_not_depend_on_the_dedup_mode(tmp_path):
    path = write_jsonl(tmp_path / "pool.jsonl", [{"instruction": f"Q{i}", "output": "a"} for i in range(5)])
    ids = []
    for mode in ("text", "text+images"):
        con = open_db(tmp_path / f"{mode.replace('+', '_')}.duckdb")
        ingest(con, [path], IngestOptions(domain="d", dedup_key=mode))
        ids.append(sorted(table(con, "candidates")["candidate_id"]))
        assert len(table(con, "images")) == 0
        con.close()
    assert ids[0] == ids[1] == sorted(candidate_id("d", dedup_key(f"Q{i}")) for i in range(5))


def test_interrupted_ingest_reruns_without_duplicating_images(db, tmp_path, pictures):
    """The same images in every chunk and in two files: one images row each, before and after an interrupt."""
    rows = [{"image": ["img/red.png", "img/green.png"][i % 2], "instruction": f"q{i}", "output": "a"}
            for i in range(30)]
    path = write_jsonl(pictures / "pool" / "pool.jsonl", rows)
    first = write_jsonl(pictures / "pool" / "first.jsonl", [{"image": "img/red.png", "instruction": "x", "output": "a"}])

    options = IngestOptions(domain="vqa", chunk_rows=7)
    with pytest.raises(KeyboardInterrupt):
        ingest(db, [first, path], options, progress=interrupt_after_first_chunk(path))
    assert_stored(db, tmp_path / "capsel.duckdb", RED)  # the committed file's image; the rest rolled back
    report = ingest(db, [first, path], options)
    assert_stored(db, tmp_path / "capsel.duckdb", RED, GREEN)
    [counts] = report.domains
    assert (counts.n_read, counts.n_inserted, counts.n_quarantined) == (30, 30, 0)
    assert sum(1 for _ in image_store_dir(tmp_path / "capsel.duckdb").rglob("*.png")) == 2


def test_worker_processes_read_images_with_the_same_result(tmp_path, pictures):
    rows = [{"image": ["img/red.png", "img/green.png", "img/none.png"][i % 3], "instruction": f"q{i % 40}",
             "output": "a"} for i in range(90)] + [{"instruction": "text", "output": "a"}]
    path = write_jsonl(pictures / "pool" / "pool.jsonl", rows)
    frames = []
    for workers in (0, 2):
        con = open_db(tmp_path / f"w{workers}.duckdb")
        ingest(con, [path], IngestOptions(domain="vqa", chunk_rows=20, workers=workers, parallel_min_bytes=0))
        frames.append({name: table(con, name).drop(columns=["ingest_run_id", "created_at"], errors="ignore")
                       for name in ("candidates", "duplicates", "quarantine", "images")})
        con.close()
    for name in frames[0]:
        assert frames[0][name].equals(frames[1][name]), name
    assert len(frames[1]["images"]) == 2 and len(frames[1]["quarantine"]) == 30
    assert (tmp_path / "w2.images").is_dir()


def test_a_database_in_memory_refuses_rows_with_images_and_keeps_text_rows(pictures):
    con = open_db(":memory:")
    text = write_jsonl(pictures / "pool" / "text.jsonl", [{"instruction": "q", "output": "a"}])
    ingest(con, [text], D)
    images = write_jsonl(pictures / "pool" / "images.jsonl", [{"image": "img/red.png", "instruction": "q2",
                                                               "output": "a"}])
    with pytest.raises(CapselError, match="in memory"):
        ingest(con, [images], D)
    assert len(table(con, "candidates")) == 1


def test_lineage_lists_a_candidates_images_with_their_files(db, tmp_path, pictures):
    from rich.console import Console

    from capsel.lineage.render import lineage_tree

    path = write_jsonl(pictures / "pool" / "pool.jsonl",
                       [{"images": ["img/green.png", "img/red.png"], "instruction": "q", "output": "a"}])
    ingest(db, [path], D)
    [cid] = table(db, "candidates")["candidate_id"]
    found = trace(db, cid)
    assert list(found.candidate["image_sha256"]) == [sha(GREEN), sha(RED)]
    store = ImageStore(image_store_dir(tmp_path / "capsel.duckdb"))
    assert [(image["position"], image["path"]) for image in found.images] == [
        (1, str(store.path(sha(GREEN), "png"))), (2, str(store.path(sha(RED), "png")))]
    console = Console(width=400, record=True)
    console.print(lineage_tree(found))
    text = console.export_text()
    assert f"1. sha256 {sha(GREEN)}: png 6x4, {len(GREEN):,} bytes" in text and "images (2, in <image> order)" in text


def test_reingest_retries_a_row_whose_image_has_arrived(db, tmp_path, pictures):
    rows = [{"image": "img/red.png", "instruction": "q1", "output": "a"},
            {"image": "img/late.png", "instruction": "q2", "output": "a"}]
    path = write_jsonl(pictures / "pool" / "pool.jsonl", rows)
    ingest(db, [path], D)
    assert table(db, "quarantine")["reason"].tolist() == ["image_missing"]
    (pictures / "pool" / "img" / "late.png").write_bytes(BLUE)
    report = ingest(db, [path], IngestOptions(domain="vqa", reingest=True))
    assert report.files[0].n_retried == 1 and report.files[0].n_quarantined == 0
    assert {row: image_list(c) for row, c in candidates_by_row(db).items()} == {1: [sha(RED)], 2: [sha(BLUE)]}
    assert_stored(db, tmp_path / "capsel.duckdb", RED, BLUE)
    [source] = table(db, "sources").to_dict("records")
    assert source["n_rows_read"] == source["n_inserted"] + source["n_duplicates"] + source["n_quarantined"] == 2
