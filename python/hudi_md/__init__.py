"""hudi-md: Apache Hudi's metadata table, from Python."""

from __future__ import annotations

__version__ = "0.1.0"
