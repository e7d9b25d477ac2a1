"""schemathesis against the app's own OpenAPI schema: every answer matches the schema, nothing is a 5xx,
and a schema-valid request is refused only for what no schema can state (the model it names)."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from app.factory import create_app
from tests.contract.conftest import LiveServer

# Refusals of schema-valid input that depend on the model or the text, which a schema cannot state:
# a layer or head the model lacks, a snapshot step it does not list, a permutation of the wrong length,
# a text of too many tokens (or none), a config that cannot work or is too big, an answer over the budget,
# fields that are each valid but not together.
MODEL_DEPENDENT = {"out_of_range", "unknown_snapshot", "invalid_intervention", "text_too_long", "text_too_short",
                   "empty_text",
                   "invalid_config", "model_too_large", "response_too_large", "not_generative", "not_in_model",
                   "conflicting_fields", "invalid_option", "too_much_work", "beyond_context", "nonfinite",
                   "unknown_stage"}  # which stage names exist depends on the model

schema = schemathesis.openapi.from_dict(create_app().openapi())


@schema.parametrize()
@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_the_api_keeps_its_schema(case: schemathesis.Case, live: LiveServer) -> None:
    response = case.call(base_url=live.url)
    case.validate_response(response, excluded_checks=[positive_data_acceptance])
    assert response.status_code < 500, response.text
    positive = case.meta is None or case.meta.generation.mode == GenerationMode.POSITIVE
    if positive and response.status_code == 422:
        assert response.json()["error"]["code"] in MODEL_DEPENDENT, response.text
