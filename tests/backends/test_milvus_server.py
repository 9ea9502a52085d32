"""A real C++ Milvus 2.3 server (PyPI ``milvus``), through the conformance suite."""

from __future__ import annotations

import pytest

from tests.backends.test_milvus_lite_server import TestMilvusLiteServer as _ServerSuite

pytestmark = pytest.mark.integration


class TestMilvusServer(_ServerSuite):
    service_fixture = "milvus_server"


del _ServerSuite  # collected once, under its own module
