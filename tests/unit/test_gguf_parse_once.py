"""An install reads a GGUF file's metadata once: every reader opened for one file inside the block is shared."""

from __future__ import annotations

import gguf
import numpy as np
from transformers.integrations.ggml import _gguf_parse_value

from capsel.models.convert import _one_gguf_parse


def _tiny_gguf(path, tensors: bool = False) -> None:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.name", "tiny")
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a", "b"])
    writer.add_array("tokenizer.ggml.scores", [0.0, -1.5, -2.25, 3.0])
    writer.add_uint32("llama.block_count", 2)
    if tensors:
        rng = np.random.default_rng(0)
        writer.add_tensor("token_embd.weight", rng.standard_normal((4, 64), dtype=np.float32))
        quantized = gguf.quantize(rng.standard_normal((8, 64), dtype=np.float32), gguf.GGMLQuantizationType.Q8_0)
        writer.add_tensor("blk.0.ffn_up.weight", quantized, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_readers_of_one_file_are_shared_inside_the_block_and_fresh_outside(tmp_path):
    first, second = tmp_path / "one.gguf", tmp_path / "two.gguf"
    _tiny_gguf(first)
    _tiny_gguf(second)
    with _one_gguf_parse():
        reader = gguf.GGUFReader(first)
        # the loader imports the name at call time, as transformers' load_gguf_checkpoint does
        from gguf import GGUFReader

        assert GGUFReader(str(first)) is reader and gguf.GGUFReader(tmp_path / "." / "one.gguf") is reader
        assert gguf.GGUFReader(second) is not reader
        assert [bytes(part).decode() for part in (reader.fields["tokenizer.ggml.tokens"].parts[index]
                for index in reader.fields["tokenizer.ggml.tokens"].data)] == ["<s>", "</s>", "a", "b"]
    assert isinstance(gguf.GGUFReader, type) and gguf.GGUFReader(first) is not reader


def _fields(reader) -> dict:
    # as transformers' load_gguf_checkpoint parses them
    return {key: [_gguf_parse_value(field.parts[index], field.types) for index in field.data]
            for key, field in reader.fields.items()}


def test_the_shared_reader_reads_what_gguf_s_own_reader_reads(tmp_path):
    path = tmp_path / "weights.gguf"
    _tiny_gguf(path, tensors=True)
    stock = gguf.GGUFReader(path)
    with _one_gguf_parse():
        shared = gguf.GGUFReader(path)
    assert type(shared.data) is np.ndarray and type(stock.data) is np.memmap
    assert _fields(shared) == _fields(stock)
    assert _fields(stock)["tokenizer.ggml.scores"] == [0.0, -1.5, -2.25, 3.0]
    assert [(t.name, t.tensor_type, list(t.shape)) for t in shared.tensors] == [
        (t.name, t.tensor_type, list(t.shape)) for t in stock.tensors]
    for ours, theirs in zip(shared.tensors, stock.tensors):
        assert np.array_equal(gguf.dequantize(ours.data, ours.tensor_type),
                              gguf.dequantize(theirs.data, theirs.tensor_type))
