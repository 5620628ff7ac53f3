"""What the tests reading ``s3a://`` through Spark share: the S3A jars of the running PySpark's
Hadoop (``scripts/fetch-s3-jars <Spark line>`` puts them in build/jars; SDK v1 for Spark 3.5's
Hadoop 3.3, v2 for Spark 4's Hadoop 3.4+), a skip naming the command when they are missing, and a
moto S3 server on a free loopback port."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JARS = REPO / "build" / "jars"


def pyspark_hadoop_version() -> str | None:
    """The Hadoop inside the running PySpark (its hadoop-client-api jar): 3.3.4 in 3.5, 3.4.1 in 4.0,
    3.5.0 in 4.3."""
    import pyspark

    api = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    return api[-1].stem.removeprefix("hadoop-client-api-") if api else None


def s3_jars() -> list[str]:
    """hadoop-aws of this PySpark's Hadoop (S3A fails on another, e.g. 3.3.4 on Spark 4's 3.4.1) and
    the AWS SDK bundle it names, as ``scripts/fetch-s3-jars`` listed them; empty if absent."""
    listing = JARS / f"s3a-hadoop-{pyspark_hadoop_version()}.classpath"
    jars = listing.read_text().split() if listing.is_file() else []
    return jars if jars and all(Path(j).is_file() for j in jars) else []


def s3_jars_or_skip() -> list[str]:
    jars = s3_jars()
    if not jars:
        import pyspark

        line = ".".join(pyspark.__version__.split(".")[:2])
        pytest.skip(
            f"hadoop-aws-{pyspark_hadoop_version()} and its AWS SDK bundle are not in {JARS} "
            f"(run scripts/fetch-s3-jars {line})"
        )
    return jars


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto S3 server on loopback; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
