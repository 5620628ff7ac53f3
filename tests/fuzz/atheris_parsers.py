"""Coverage-guided fuzzing (atheris, libFuzzer) of hudi-md's hand-written parsers: HFile, Hudi log
blocks (with their records, delete lists and HFile contents) and timeline instants. Any exception
that is not a ``HudiMdError`` is a finding. Run by ``scripts/fuzz`` (not by pytest: the file name
does not start with ``test_``)::

    python tests/fuzz/atheris_parsers.py hfile|log|instant CORPUS_DIR -max_total_time=60
"""

from __future__ import annotations

import contextlib
import sys

import atheris

with atheris.instrument_imports():
    from hudi_md.errors import HudiMdError
    from hudi_md.formats.commit_metadata import parse_instant_metadata
    from hudi_md.formats.hfile import HFileReader
    from hudi_md.formats.logfile import LogBlockType, iter_log_blocks
    from hudi_md.storage.base import BytesInputFile


def fuzz_hfile(data: bytes) -> None:
    try:
        reader = HFileReader.from_bytes(data, "fuzz.hfile")
        _ = reader.schema, reader.entry_count
        for _ in reader.scan():
            pass
        reader.get(b"key")
    except HudiMdError:
        pass


def fuzz_log(data: bytes) -> None:
    try:
        for block in iter_log_blocks(BytesInputFile(data, "fuzz.log.1_0-0-0")):
            if block.block_type is LogBlockType.AVRO_DATA:
                block.avro_records()
            elif block.block_type is LogBlockType.DELETE:
                block.delete_records()
            elif block.block_type is LogBlockType.PARQUET_DATA:
                block.parquet_table()
            elif block.block_type is LogBlockType.HFILE_DATA:
                for _ in block.hfile_reader().scan():
                    pass
    except HudiMdError:
        pass


def fuzz_instant(data: bytes) -> None:
    with contextlib.suppress(HudiMdError):
        parse_instant_metadata(data, "fuzz.commit")


TARGETS = {"hfile": fuzz_hfile, "log": fuzz_log, "instant": fuzz_instant}

if __name__ == "__main__":
    target = TARGETS[sys.argv.pop(1)]
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()
