"""hudi_md.storage.hadoop_s3a: Hadoop's S3A settings as s3fs options, one test per key family, and
hudi_md.storage.redaction. The s3fs options are checked against s3fs itself where it matters: a
client built from them must point where S3A would (endpoint, region, addressing style)."""

from __future__ import annotations

import io
import json
import logging
import struct
from typing import Any

import pytest

from hudi_md.errors import InvalidOptionError
from hudi_md.spark import planner
from hudi_md.storage.hadoop_s3a import s3a_storage_options
from hudi_md.storage.redaction import (
    REDACTED,
    ScrubbedStream,
    Scrubber,
    is_secret_key,
    redact_options,
    secret_values,
)

DEFAULTS = {"use_listings_cache": False, "max_concurrency": 1}


def test_credentials_from_the_session_conf() -> None:
    conf = {"fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK", "fs.s3a.session.token": "ST"}
    assert s3a_storage_options("s3a://b/t", {}, conf) == {
        **DEFAULTS,
        "key": "AK",
        "secret": "SK",
        "token": "ST",
    }
    # the same on s3:// and s3n://; nothing on other file systems
    assert s3a_storage_options("s3://b/t", {}, conf)["key"] == "AK"
    assert s3a_storage_options("s3n://b/t", {}, conf)["secret"] == "SK"
    assert s3a_storage_options("file:/tmp/t", {"hoodie.x": "1"}, conf) == {"hoodie.x": "1"}
    assert s3a_storage_options("/tmp/t", {}, conf) == {}


def test_read_options_beat_the_session_conf() -> None:
    conf = {"fs.s3a.access.key": "session", "fs.s3a.secret.key": "session-secret"}
    got = s3a_storage_options("s3a://b/t", {"spark.hadoop.fs.s3a.access.key": "spark-hadoop-option"}, conf)
    assert (got["key"], got["secret"]) == ("spark-hadoop-option", "session-secret")
    both = {"spark.hadoop.fs.s3a.access.key": "spark-hadoop-option", "fs.s3a.access.key": "option"}
    assert s3a_storage_options("s3a://b/t", both, conf)["key"] == "option"
    # explicit s3fs credentials: no S3A credential is mapped, not even a missing half
    explicit = s3a_storage_options("s3a://b/t", {"key": "k"}, conf)
    assert explicit["key"] == "k" and "secret" not in explicit
    assert "key" not in s3a_storage_options("s3a://b/t", {"anon": True}, conf)


def test_per_bucket_keys_override_for_their_bucket_only() -> None:
    conf = {
        "fs.s3a.endpoint": "http://global:9000",
        "fs.s3a.access.key": "global",
        "fs.s3a.secret.key": "global-secret",
        "fs.s3a.bucket.data.endpoint": "http://data:9000",
        "fs.s3a.bucket.data.access.key": "data-key",
        "fs.s3a.bucket.data.path.style.access": "true",
        "fs.s3a.bucket.data-2.access.key": "other-bucket",
    }
    data = s3a_storage_options("s3a://data/t", {}, conf)
    assert data["key"] == "data-key" and data["secret"] == "global-secret"
    assert data["client_kwargs"] == {"endpoint_url": "http://data:9000"}
    assert data["config_kwargs"] == {"s3": {"addressing_style": "path"}}
    other = s3a_storage_options("s3a://logs/t", {}, conf)
    assert other["key"] == "global" and other["client_kwargs"] == {"endpoint_url": "http://global:9000"}
    assert "config_kwargs" not in other
    # a per-bucket session setting beats a global read option, as S3A applies them
    assert s3a_storage_options("s3a://data/t", {"fs.s3a.access.key": "option"}, conf)["key"] == "data-key"


def test_endpoint_region_ssl_and_path_style_as_s3fs_uses_them() -> None:
    import s3fs

    conf = {
        "fs.s3a.endpoint": "127.0.0.1:9000",
        "fs.s3a.endpoint.region": "eu-west-1",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.fast.upload": "true",  # Hadoop client tuning: not an s3fs option
    }
    got = s3a_storage_options("s3a://b/t", {}, conf)
    assert got == {
        **DEFAULTS,
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"},
        "use_ssl": False,
        "config_kwargs": {"s3": {"addressing_style": "path"}},
    }
    # SSL on (S3A's default): https
    https = s3a_storage_options("s3a://b/t", {}, {"fs.s3a.endpoint": "s3.example.com"})
    assert https["client_kwargs"]["endpoint_url"] == "https://s3.example.com"
    assert "use_ssl" not in https
    # explicit client_kwargs are merged over the mapped ones
    merged = s3a_storage_options("s3a://b/t", {"client_kwargs": {"region_name": "r"}}, conf)
    assert merged["client_kwargs"] == {"endpoint_url": "http://127.0.0.1:9000", "region_name": "r"}

    fs = s3fs.S3FileSystem(**{**got, "key": "k", "secret": "s", "skip_instance_cache": True})
    client = fs.connect()
    assert client.meta.endpoint_url == "http://127.0.0.1:9000"
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.config.s3["addressing_style"] == "path"


def test_credentials_providers() -> None:
    keys = {"fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK", "fs.s3a.session.token": "ST"}
    provider = "fs.s3a.aws.credentials.provider"

    def creds(conf: dict[str, str]) -> dict[str, Any]:
        got = s3a_storage_options("s3a://b/t", {}, conf)
        return {k: v for k, v in got.items() if k not in DEFAULTS}

    anonymous = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    simple = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    temporary = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    env_v1 = "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"
    default_v2 = "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
    assert creds({**keys, provider: anonymous}) == {"anon": True}
    assert creds({**keys, provider: simple}) == {"key": "AK", "secret": "SK"}  # Simple takes no token
    assert creds({**keys, provider: temporary}) == {"key": "AK", "secret": "SK", "token": "ST"}
    # the AWS SDK's chains: botocore's default chain finds the same credentials
    assert creds({**keys, provider: env_v1}) == {}
    assert creds({provider: default_v2}) == {}
    # a chain, tried in order: a provider without its keys passes to the next one
    chain = f"{temporary},\n {simple}, {env_v1}"
    assert creds({"fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK", provider: chain}) == {
        "key": "AK",
        "secret": "SK",
    }
    assert creds({provider: chain}) == {}
    assert creds({provider: f"{env_v1},{anonymous}"}) == {}
    # no provider set: S3A's default chain, which starts with the configured keys
    assert creds(keys) == {"key": "AK", "secret": "SK", "token": "ST"}
    # a provider without an s3fs equivalent is refused, unless s3fs credentials are explicit
    assumed = "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider"
    with pytest.raises(InvalidOptionError, match=r"AssumedRoleCredentialProvider.*s3a://b/t"):
        creds({**keys, provider: assumed})
    with pytest.raises(InvalidOptionError) as e:
        creds({**keys, provider: f"{simple},com.example.Custom"} | {"fs.s3a.secret.key": ""})
    assert "com.example.Custom" in str(e.value) and "SK" not in str(e.value)
    assert s3a_storage_options("s3a://b/t", {"profile": "p"}, {provider: assumed})["profile"] == "p"
    # per bucket
    per_bucket = {**keys, f"fs.s3a.bucket.public.{provider.removeprefix('fs.s3a.')}": anonymous}
    assert s3a_storage_options("s3a://public/t", {}, per_bucket)["anon"] is True
    assert s3a_storage_options("s3a://private/t", {}, per_bucket)["key"] == "AK"


def test_requester_pays() -> None:
    assert (
        s3a_storage_options("s3a://b/t", {}, {"fs.s3a.requester.pays.enabled": "true"})["requester_pays"]
        is True
    )
    assert "requester_pays" not in s3a_storage_options(
        "s3a://b/t", {}, {"fs.s3a.requester.pays.enabled": "false"}
    )


# --- redaction ---------------------------------------------------------------------------------------


def test_secret_keys_as_spark_redacts_them() -> None:
    for key in (
        "fs.s3a.secret.key",
        "fs.s3a.access.key",
        "fs.s3a.session.token",
        "fs.s3a.bucket.b.secret.key",
        "spark.hadoop.fs.s3a.secret.key",
        "hoodie.metastore.password",
        "fs.azure.account.key.x.credential",
        "secret",
        "token",
    ):
        assert is_secret_key(key), key
    for key in ("fs.s3a.endpoint", "fs.s3a.path.style.access", "hoodie.table.name", "key"):
        assert not is_secret_key(key), key
    opts = {"fs.s3a.secret.key": "SK", "fs.s3a.endpoint": "e"}
    assert redact_options(opts) == {"fs.s3a.secret.key": REDACTED, "fs.s3a.endpoint": "e"}
    nested = {"client_kwargs": {"aws_secret_access_key": "hidden-1"}, "fs.s3a.session.token": "tok-2"}
    assert secret_values({**nested, "fs.s3a.endpoint": "visible"}) == {"hidden-1", "tok-2"}


def test_scrubber_and_scrubbed_stream() -> None:
    scrubber = Scrubber()
    scrubber.remember({"abcd1234", "abcd1234-longer", "xy"})  # too short to scrub: xy
    assert scrubber.scrub("key abcd1234-longer then abcd1234, xy") == f"key {REDACTED} then {REDACTED}, xy"
    out = io.StringIO()
    stream = ScrubbedStream(out, scrubber)
    print("failed with abcd1234", file=stream)
    assert out.getvalue() == f"failed with {REDACTED}\n"


def _frames(*requests: dict[str, Any]) -> io.BytesIO:
    data = b"".join(struct.pack(">I", len(b)) + b for b in (json.dumps(r).encode() for r in requests))
    return io.BytesIO(data)


def test_planner_errors_and_log_never_carry_a_secret(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Whatever a library puts in its error, the secret of the request's Hadoop conf or options is
    replaced in the answer and in the planner's log."""
    secret, token = "wJalrXUtnFEMI-secret", "FQoGZXIvYXdzE-token"

    def failing_open(path: str, options: dict[str, Any]) -> None:
        raise PermissionError(f"denied for {options.get('secret')} / {options.get('token')} at {path}")

    monkeypatch.setattr(planner, "open_table", failing_open)
    request = {
        "op": "schema",
        "path": "s3a://b/t",
        "options": {"fs.s3a.session.token": token},
        "hadoop_conf": {"fs.s3a.access.key": "AKIAEXAMPLE", "fs.s3a.secret.key": secret},
    }
    out = io.BytesIO()
    with caplog.at_level(logging.WARNING, logger=planner.__name__):
        planner.serve(_frames(request), out)
    (n,) = struct.unpack(">I", out.getvalue()[:4])
    answer = json.loads(out.getvalue()[4 : 4 + n])
    assert answer["ok"] is False and answer["error_type"] == "PermissionError"
    assert answer["message"] == f"denied for {REDACTED} / {REDACTED} at s3a://b/t"
    assert "planner request failed" in caplog.text and REDACTED in caplog.text
    assert secret not in caplog.text and token not in caplog.text
