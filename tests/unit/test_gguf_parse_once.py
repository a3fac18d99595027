"""An install reads a GGUF file's metadata once: every reader opened for one file inside the block is shared."""

from __future__ import annotations

import gguf

from capsel.models.convert import _one_gguf_parse


def _tiny_gguf(path) -> None:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.name", "tiny")
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a", "b"])
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
