"""An object-store URL whose fsspec filesystem is not installed fails with MissingExtraError naming
the hudi-md extra to install, not with fsspec's bare ImportError. The missing package is simulated
(fsspec's registry pointed at a module that does not exist), so the tests hold whether or not
gcsfs, adlfs or s3fs are installed."""

from __future__ import annotations

import importlib

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.errors import HudiMdError, MissingExtraError
from hudi_md.storage import Storage

# the module: the package attribute fsspec.registry is the registry mapping, not the module
REGISTRY = importlib.import_module("fsspec.registry")


@pytest.fixture
def missing_filesystems(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every object-store protocol's filesystem class lives in a module that cannot be imported;
    the error text is fsspec's own."""
    for protocol, extra in (("gs", "gcs"), ("gcs", "gcs"), ("abfs", "azure"), ("az", "azure"), ("s3", "s3")):
        monkeypatch.setitem(
            REGISTRY.known_implementations,
            protocol,
            {"class": f"hudi_md_test_missing_{extra}.FileSystem", "err": f"Install the {extra} package"},
        )
        # an already imported class would be used without looking the module up
        monkeypatch.delitem(REGISTRY._registry, protocol, raising=False)


@pytest.mark.parametrize(
    ("uri", "protocol", "extra"),
    [
        ("gs://bucket/table", "gs", "gcs"),
        ("gcs://bucket/table", "gcs", "gcs"),
        ("abfs://container@account.dfs.core.windows.net/table", "abfs", "azure"),
        ("az://container/table", "az", "azure"),
        ("s3://bucket/table", "s3", "s3"),
        ("simplecache::gs://bucket/table", "gs", "gcs"),
    ],
)
def test_storage_names_the_extra(missing_filesystems: None, uri: str, protocol: str, extra: str) -> None:
    with pytest.raises(MissingExtraError) as info:
        Storage(uri)
    e = info.value
    assert e.extra == extra
    assert f"pip install 'hudi-md[{extra}]'" in str(e)
    assert f"{protocol}://" in str(e)
    assert f"Install the {extra} package" in str(e)  # fsspec's reason is kept
    assert isinstance(e, HudiMdError)
    assert isinstance(e, ImportError)  # code that caught fsspec's ImportError still does
    assert isinstance(e.__cause__, ImportError)


def test_open_table_and_write_name_the_extra(missing_filesystems: None) -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'hudi-md\[gcs\]'"):
        hudi_md.open_table("gs://bucket/table")
    data = pa.table({"id": ["a"], "ts": [1]})
    options = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id"}
    with pytest.raises(MissingExtraError, match=r"pip install 'hudi-md\[azure\]'"):
        hudi_md.write(data, "az://container/table", options=options)


def test_a_filesystem_no_extra_installs_is_still_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        REGISTRY.known_implementations,
        "hudimdtest",
        {"class": "hudi_md_test_missing_other.FileSystem", "err": "Install the other package"},
    )
    with pytest.raises(MissingExtraError, match="Install the other package") as info:
        Storage("hudimdtest://somewhere/table")
    assert info.value.extra is None
