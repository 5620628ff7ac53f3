"""The metastore client's options: which server, and how long a request may wait."""

from __future__ import annotations

import pytest

from hudi_md.errors import InvalidOptionError
from hudi_md.metastore.client import MetastoreClient
from hudi_md.metastore.options import METASERVER_TIMEOUT, metaserver_timeout

ON = {"hoodie.metaserver.enabled": "true", "hoodie.metaserver.uris": "http://127.0.0.1:1"}


def test_request_timeout_option() -> None:
    assert metaserver_timeout({}) == 30.0
    assert metaserver_timeout({METASERVER_TIMEOUT: "600"}) == 600.0
    slow = MetastoreClient.from_options({**ON, METASERVER_TIMEOUT: "600"})
    default = MetastoreClient.from_options(ON)
    assert slow is not None and default is not None and slow is not default
    assert slow._http.timeout.read == 600.0 and default._http.timeout.read == 30.0
    assert MetastoreClient.from_options({**ON, METASERVER_TIMEOUT: 600}) is slow


@pytest.mark.parametrize("bad", ["0", "-1", "soon", "nan"])
def test_a_bad_timeout_names_the_option(bad: str) -> None:
    with pytest.raises(InvalidOptionError, match=METASERVER_TIMEOUT):
        MetastoreClient.from_options({**ON, METASERVER_TIMEOUT: bad})
