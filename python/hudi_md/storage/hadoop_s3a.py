"""Hadoop's S3A settings (``fs.s3a.*``) as the s3fs options hudi-md's storage layer takes.

Spark reads ``s3a://`` through Hadoop's S3A file system, configured by the session's Hadoop
configuration (``spark.hadoop.fs.s3a.*`` on the builder, ``sc._jsc.hadoopConfiguration().set``,
``core-site.xml``) and by ``fs.s3a.*`` read options. The shim sends the planner the S3A entries of
that configuration (``hadoop_conf`` in planner requests), so the Python side plans and merges from
the same endpoint with the same credentials; this module is the one place that maps them.

Precedence, lowest first: the session's Hadoop configuration, ``spark.hadoop.fs.s3a.*`` read
options, ``fs.s3a.*`` read options; then per-bucket keys (``fs.s3a.bucket.<bucket>.<key>``)
override the global ones for that bucket, as S3A applies them; explicit s3fs options (``key``,
``client_kwargs``...) win over anything mapped.

Key families:

* credentials: ``access.key`` → ``key``, ``secret.key`` → ``secret``, ``session.token`` →
  ``token``;
* ``aws.credentials.provider`` (a chain, tried in order): ``SimpleAWSCredentialsProvider`` and
  ``TemporaryAWSCredentialsProvider`` take the keys above (the latter with the session token),
  ``AnonymousAWSCredentialsProvider`` is ``anon``, the AWS SDK's own chains (environment, profile,
  instance or container role, web identity) are botocore's default chain (no option set). Any
  other provider (e.g. ``AssumedRoleCredentialProvider``, a custom class) has no s3fs equivalent:
  refused (:class:`~hudi_md.errors.InvalidOptionError`) unless s3fs credentials are given
  explicitly;
* endpoint: ``endpoint`` (``https://`` added unless ``connection.ssl.enabled`` is false),
  ``endpoint.region``, ``connection.ssl.enabled``, ``path.style.access``;
* ``requester.pays.enabled`` → ``requester_pays``.

Other ``fs.s3a.*`` keys (tuning of Hadoop's client) are dropped: they are not s3fs options.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hudi_md.errors import InvalidOptionError

S3A = "fs.s3a."
SPARK_HADOOP_S3A = "spark.hadoop.fs.s3a."
CREDENTIALS_PROVIDER = "aws.credentials.provider"
_CREDENTIALS = {"access.key": "key", "secret.key": "secret", "session.token": "token"}
_S3_SCHEMES = ("s3", "s3a", "s3n")

_SIMPLE = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
_TEMPORARY = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
_ANONYMOUS = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
# Providers whose credentials botocore's default chain finds the same way (environment, shared
# profile files, container and instance roles, web identity tokens).
_SDK_DEFAULT_CHAIN = frozenset(
    {
        "com.amazonaws.auth.EnvironmentVariableCredentialsProvider",
        "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
        "com.amazonaws.auth.InstanceProfileCredentialsProvider",
        "com.amazonaws.auth.ContainerCredentialsProvider",
        "com.amazonaws.auth.EC2ContainerCredentialsProviderWrapper",
        "com.amazonaws.auth.WebIdentityTokenCredentialsProvider",
        "com.amazonaws.auth.profile.ProfileCredentialsProvider",
        "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider",
        "org.apache.hadoop.fs.s3a.SharedInstanceCredentialProvider",
        "org.apache.hadoop.fs.s3a.SharedInstanceProfileCredentialsProvider",
        "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
        "software.amazon.awssdk.auth.credentials.SystemPropertyCredentialsProvider",
        "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
        "software.amazon.awssdk.auth.credentials.InstanceProfileCredentialsProvider",
        "software.amazon.awssdk.auth.credentials.ContainerCredentialsProvider",
        "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider",
        "software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider",
    }
)
# The s3fs options that say where credentials come from; given explicitly, no provider is mapped.
_EXPLICIT_CREDENTIALS = ("key", "secret", "token", "anon", "profile", "session")


def is_s3_path(path: str) -> bool:
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.lower() in _S3_SCHEMES


def effective_s3a(path: str, options: Mapping[str, str], hadoop_conf: Mapping[str, str]) -> dict[str, str]:
    """The S3A settings that apply to ``path``'s bucket, keys without ``fs.s3a.``."""
    _, _, rest = path.partition("://")
    bucket = rest.split("/", 1)[0] if rest else ""
    merged: dict[str, str] = {}
    for source, prefix in ((hadoop_conf, S3A), (options, SPARK_HADOOP_S3A), (options, S3A)):
        for k, v in source.items():
            if k.startswith(prefix):
                merged[k[len(prefix) :]] = v
    per_bucket = f"bucket.{bucket}."
    out = {k: v for k, v in merged.items() if not k.startswith("bucket.")}
    if bucket:
        out.update({k[len(per_bucket) :]: v for k, v in merged.items() if k.startswith(per_bucket)})
    return out


def s3a_storage_options(
    path: str, options: Mapping[str, Any], hadoop_conf: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``options`` without S3A settings, plus the s3fs options the S3A settings of ``options`` and
    ``hadoop_conf`` (the session's Hadoop configuration) mean for ``path``. Not an S3 path: the S3A
    settings are dropped. s3fs's listing cache is off unless asked for (the planner lives long and
    must see the commits other processes make); ``max_concurrency`` is 1 unless given (else each
    whole-file read costs a HEAD for its size before the GET)."""
    out = {k: v for k, v in options.items() if not (k.startswith(S3A) or k.startswith(SPARK_HADOOP_S3A))}
    if not is_s3_path(path):
        return out
    s3a = effective_s3a(path, {k: str(v) for k, v in options.items()}, hadoop_conf or {})
    out.setdefault("use_listings_cache", False)
    out.setdefault("max_concurrency", 1)
    derived: dict[str, Any] = {}
    if not any(k in out for k in _EXPLICIT_CREDENTIALS):
        derived.update(_credentials(path, s3a))
    ssl = s3a.get("connection.ssl.enabled", "true").strip().lower() != "false"
    client: dict[str, Any] = {}
    endpoint = s3a.get("endpoint", "").strip()
    if endpoint:
        client["endpoint_url"] = (
            endpoint if "://" in endpoint else f"{'https' if ssl else 'http'}://{endpoint}"
        )
    if s3a.get("endpoint.region", "").strip():
        client["region_name"] = s3a["endpoint.region"].strip()
    if client:
        derived["client_kwargs"] = client
    if not ssl:
        derived["use_ssl"] = False
    if _true(s3a.get("path.style.access")):
        derived["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    if _true(s3a.get("requester.pays.enabled")):
        derived["requester_pays"] = True
    for key, value in derived.items():
        if key not in out:
            out[key] = value
        elif isinstance(value, dict) and isinstance(out[key], dict):
            out[key] = {**value, **out[key]}
    return out


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def _credentials(path: str, s3a: Mapping[str, str]) -> dict[str, Any]:
    """The s3fs credential options of the first provider of the chain that has credentials."""
    keys = {opt: s3a[name] for name, opt in _CREDENTIALS.items() if s3a.get(name, "").strip()}
    raw = s3a.get(CREDENTIALS_PROVIDER, "").strip()
    if not raw:  # S3A's default chain starts with the configured keys
        return keys
    for provider in (p.strip() for p in raw.split(",") if p.strip()):
        if provider == _ANONYMOUS:
            return {"anon": True}
        if provider == _SIMPLE and "key" in keys and "secret" in keys:
            return {k: keys[k] for k in ("key", "secret")}
        if provider == _TEMPORARY and len(keys) == 3:
            return keys
        if provider in _SDK_DEFAULT_CHAIN:
            return {}
        if provider not in (_SIMPLE, _TEMPORARY):
            raise InvalidOptionError(
                f"fs.s3a.{CREDENTIALS_PROVIDER} {provider} (for {path}) has no equivalent in hudi-md's "
                "storage layer (s3fs); give the credentials as s3fs read options (key, secret, token, "
                "or profile) or use a provider it maps: Simple, Temporary, Anonymous, or the AWS SDK's "
                "environment, profile, instance, container or web identity providers"
            )
    return {}
