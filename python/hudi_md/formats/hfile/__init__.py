"""Pure-Python reader for HFile v3, the format of Hudi metadata-table base files and HFile log blocks.

Covers what Hudi writes: HBase-written files (Hudi <= 1.0.x, CRC32C checksums, single- or multi-level
block index, shortened "fake" index keys) and files from Hudi's own writer (1.1+, NULL checksums,
row-only index keys, including the 1.1.x protobuf-varint index key length bug). GZ and NONE codecs.
"""

from __future__ import annotations

from hudi_md.formats.hfile._layout import HFileTrailer
from hudi_md.formats.hfile.reader import CellColumns, HFileReader
from hudi_md.formats.hfile.writer import HFileWriter, write_hfile

__all__ = ["CellColumns", "HFileReader", "HFileTrailer", "HFileWriter", "write_hfile"]
