import pytest

import udfs


@pytest.fixture(scope="session")
def registry():
    return udfs.functions()
