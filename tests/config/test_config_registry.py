"""The registry (``hudi_md.config``): its public shape, and hudi-md's defaults against Apache Hudi
1.2's, as ``hudi_keys.json`` (generated from Hudi's bundle jar by ``scripts/hudi-config-keys``)
records them. A default changed in the registry, or a Hudi default misquoted, fails here."""

from __future__ import annotations

from typing import Any

import pytest

from hudi_md.config import NOT_IN_HUDI, ConfigOption, all_options
from hudi_md.config.option import SCOPES, TYPES, option_for
from hudi_md.config.unknown import hudi_config, hudi_keys

HUDI = hudi_config()["keys"]
# HoodieTableVersion's names, as the enum default of hoodie.table.version prints; the file says 9
TABLE_VERSIONS = {"SIX": "6", "EIGHT": "8", "NINE": "9"}


def hudi_defaults(option: ConfigOption[Any]) -> list[Any]:
    """Apache Hudi's defaults of ``option`` as values of its type: the one a Spark writer gets when
    Hudi sets it by engine (``spark_default``), else each class's that declares the key."""
    entry = HUDI[option.key]
    if "spark_default" in entry:
        raw = [entry["spark_default"]]
    else:
        raw = [entry["default"], *entry.get("declared", {}).values()]
    return [None if value is None else option.parse(TABLE_VERSIONS.get(value, value)) for value in raw]


def test_all_options_is_every_option_once_sorted_by_key() -> None:
    options = all_options()
    keys = [o.key for o in options]
    assert keys == sorted(keys)
    names = [name for o in options for name in o.keys]
    assert len(names) == len(set(names)), "a key or alternative is declared twice"
    assert all(option_for(name) is o for o in options for name in o.keys)
    # the keys this registry was written for (a dropped module of declarations shows here)
    for key in ("hoodie.metadata.enable", "hoodie.table.name", "spark.hudi_md.read.connector"):
        assert option_for(key) is not None


def test_every_option_has_the_documented_fields() -> None:
    for o in all_options():
        assert o.type in TYPES, o.key
        assert o.scopes and set(o.scopes) <= set(SCOPES), o.key
        assert isinstance(o.scopes, tuple) and isinstance(o.in_hudi, bool), o.key
        assert o.doc.strip().endswith("."), f"{o.key}: doc should be a sentence or two"
        if o.type == "enum":
            assert isinstance(o.choices, tuple) and o.choices, o.key
            assert o.default is None or o.default in o.choices, o.key
        else:
            assert o.choices is None, o.key
        if o.default is not None:
            assert o.parse(_as_text(o.default)) == o.default, f"{o.key}: its default does not read back"


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def test_in_hudi_is_what_apache_hudi_declares() -> None:
    """An option says Hudi has its key exactly when Hudi 1.2's jar declares it (or an older name
    of it): hudi-md's own keys are not Hudi's, and no Hudi key is passed off as hudi-md's."""
    known = hudi_keys()
    for o in all_options():
        if o.in_hudi:
            assert o.key in HUDI, f"{o.key}: not a key of Apache Hudi {hudi_config()['hudi_version']}"
        else:
            assert o.hudi_default is NOT_IN_HUDI
            assert not set(o.keys) & known, f"{o.key} is Apache Hudi's key: give its default"


@pytest.mark.parametrize("option", [o for o in all_options() if o.in_hudi], ids=lambda o: o.key)
def test_defaults_are_apache_hudis(option: ConfigOption[Any]) -> None:
    """The registry quotes Hudi's default right, and hudi-md's default is Hudi's unless the option
    says it differs (and its doc says why); an option that says so really differs."""
    assert option.hudi_default in hudi_defaults(option), (
        f"{option.key}: the registry says Apache Hudi's default is {option.hudi_default!r}, "
        f"Hudi's jar says {HUDI[option.key]}"
    )
    if option.differs_from_hudi:
        assert option.default != option.hudi_default, f"{option.key}: differs_from_hudi, but it does not"
    else:
        assert option.default == option.hudi_default


def test_the_options_that_differ_from_hudi() -> None:
    """The documented differences, by name: a new one is a decision, not an accident."""
    differing = {o.key for o in all_options() if o.differs_from_hudi}
    assert differing == {
        "hoodie.database.name",
        "hoodie.datasource.write.keygenerator.class",
        "hoodie.datasource.write.keygenerator.type",
        "hoodie.filesystem.operation.retry.enable",
        "hoodie.logfile.data.block.format",
        "hoodie.metaserver.uris",
    }


def test_every_key_is_of_a_known_family() -> None:
    """Hudi's keys (``hoodie.*``; ``_hoodie.*`` its internal ones; ``as.of.instant``), hudi-md's
    own (``hudi_md.*``) and the Spark shim's configuration (``spark.hudi_md.*``, scope spark)."""
    for o in all_options():
        assert o.key.startswith(("hoodie.", "_hoodie.", "hudi_md.", "spark.hudi_md.")) or o.key == (
            "as.of.instant"
        ), o.key
        assert (o.key.startswith("spark.hudi_md.")) == (o.scopes == ("spark",)), o.key
