"""The backend registry (issue 29, item 5): one record per built-in backend, from which the
spec parsing, the help, the price lookup and the telemetry names all derive (SPEC M1)."""

from __future__ import annotations

import pytest

from tao.cli.options import MODEL_FORMS
from tao.errors import ModelSpecError
from tao.models import SPEC_FORMS, load_model
from tao.models.backends import BACKENDS, backend_of, factory_of
from tao.models.pricing import PROVIDERS as PRICE_PROVIDERS
from tao.telemetry.attributes import PROVIDERS as TELEMETRY_PROVIDERS
from tao.telemetry.attributes import model_names


def test_every_record_names_a_factory_that_imports() -> None:
    """A typo in a record's reference would only show when someone picks that backend."""
    for backend in BACKENDS:
        assert callable(factory_of(backend)), backend.prefix


def test_help_error_pricing_and_telemetry_derive_from_the_records_M1() -> None:
    assert [b.prefix for b in BACKENDS] == ["local", "openai", "anthropic", "gemini", "replay"]
    for backend in BACKENDS:
        assert backend.spec_form in MODEL_FORMS and backend.spec_form in SPEC_FORMS
        assert TELEMETRY_PROVIDERS[backend.prefix] == backend.telemetry_name
        assert PRICE_PROVIDERS.get(backend.prefix) == backend.price_provider
    assert model_names("gemini:gemini-3.8-flash") == ("gcp.gemini", "gemini-3.8-flash")
    assert model_names("shout:hi") == ("custom", "hi")  # not a built-in: a plugin's or custom


@pytest.mark.parametrize("spec", ["openai", "openai:", "replay:", " gpt4", "", "Replay:x"])
def test_a_spec_a_backend_cannot_take_is_one_line_listing_the_forms_M1(spec: str) -> None:
    assert backend_of(spec) is None
    with pytest.raises(ModelSpecError) as caught:
        load_model(spec)
    assert str(caught.value) == f"unknown model spec {spec!r}; valid forms: {SPEC_FORMS}"
