"""Record-key → MDT file group mapping (Hudi's ``mapRecordKeyToFileGroupIndex`` over Java's
``String.hashCode``)."""

from __future__ import annotations

import random

from hudi_md.metadata import keys as K


def test_java_string_hash_known_values() -> None:
    # values of String.hashCode() as Java computes them
    assert K.java_string_hash("hello") == 99162322
    assert K.java_string_hash("") == 0
    assert K.java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE
    assert K.java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # a surrogate pair: two UTF-16 units


def test_vectorised_file_group_indexes_equal_the_scalar_ones() -> None:
    rng = random.Random(1)
    alphabet = "abcXYZ019-_:/é中\U0001f600"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(5000)]
    keys += [str(i) for i in range(5000)] + ["polygenelubricants"]
    for n in (1, 2, 3, 7, 10, 64, 1000):
        assert K.file_group_indexes(keys, n) == [K.file_group_index(k, n) for k in keys], n
    assert K.file_group_indexes([], 4) == []
