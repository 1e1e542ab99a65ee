"""Package attributes imported on first use, and unknown names refused."""

import pytest

import laneway.state
from laneway.core.lazy import lazy_attributes


def test_a_lazy_name_is_imported_from_its_home() -> None:
    from laneway.state.admission.redis_store import RedisStore

    assert laneway.state.RedisStore is RedisStore


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    getattr_ = lazy_attributes("pkg", {"Known": "laneway.state.admission.memory"})
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'Missing'"):
        getattr_("Missing")
