"""The paper's dedup key: NFKC, casefold, whitespace collapse, trim; instruction + input only."""

import hashlib
import random
import re
import sys
import unicodedata

import pytest

from capsel.ingest.dedup_key import KEY_SEPARATOR, candidate_id, dedup_key, normalize_text


def reference_normalize(text: str) -> str:
    """The paper's recipe written the obvious way (regex), to check the fast implementation against."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


@pytest.mark.parametrize(
    ("variant", "canonical"),
    [
        ("ＷＨＡＴ ｉｓ ２＋２？", "what is 2+2?"),          # full-width letters, digits, punctuation
        ("Straße", "strasse"),                              # casefold, not lower(): ß -> ss
        ("STRASSE", "strasse"),
        ("  tabs\tand\nnewlines\r\n  ", "tabs and newlines"),
        ("no\u00a0break\u2003em\u3000ideographic", "no break em ideographic"),
        ("ﬁnance", "finance"),                              # compatibility ligature
        ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),                             # final sigma folds to σ
        ("", ""),
    ],
)
def test_normalize_text_examples(variant, canonical):
    assert normalize_text(variant) == canonical


def test_normalize_text_matches_regex_reference_on_random_unicode():
    whitespace = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    alphabet = list("aAßẞİıﬁＡ１é́ΣςЖ😀") + whitespace
    rng = random.Random(0)
    for _ in range(3000):
        text = "".join(rng.choices(alphabet, k=rng.randint(0, 20)))
        assert normalize_text(text) == reference_normalize(text), repr(text)


def test_separator_cannot_occur_in_normalised_text():
    assert KEY_SEPARATOR not in normalize_text(f"a{KEY_SEPARATOR}b")
    # so splitting text between instruction and input can never produce the same key
    assert dedup_key("a b", "") != dedup_key("a", "b")
    assert dedup_key(f"a{KEY_SEPARATOR}b", "") != dedup_key("a", "b")


def test_input_participates_in_key_and_absent_equals_empty():
    assert dedup_key("Explain", "print(1)") != dedup_key("Explain", "print(2)")
    assert dedup_key("Explain", "PRINT(1)\t") == dedup_key("explain ", "print(1)")
    assert dedup_key("Explain") == dedup_key("Explain", "   ")


def test_candidate_id_is_blake2b_of_domain_and_key():
    key = dedup_key("What is 2+2?")
    expected = hashlib.blake2b(("math\x1f" + key).encode(), digest_size=10).hexdigest()
    assert candidate_id("math", key) == expected
    assert re.fullmatch(r"[0-9a-f]{20}", expected)
    assert candidate_id("code", key) != expected


def test_normalize_text_shortcuts_match_the_reference_for_every_code_point():
    # The printable shortcut relies on this: no whitespace character but the space is printable.
    assert [c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace() and c.isprintable()] == [" "]
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        for text in (char, f" {char}", f"A{char}b  c", f"{char}{char}"):
            assert normalize_text(text) == reference_normalize(text), repr(text)


def test_normalize_text_matches_reference_on_random_ascii_and_mixed_text():
    ascii_chars = [chr(c) for c in range(128)]
    rng = random.Random(1)
    for alphabet in (ascii_chars, ascii_chars + list("ßﬁＡé\u00a0\u3000ΣЖ")):
        for _ in range(5000):
            text = "".join(rng.choices(alphabet, k=rng.randint(0, 30)))
            assert normalize_text(text) == reference_normalize(text), repr(text)
