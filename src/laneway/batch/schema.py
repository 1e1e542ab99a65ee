"""A JSON Schema file as the model the structured re-ask ladder validates with.

``laneway.engine.structured`` asks for a pydantic model: it sends the model's
JSON schema upstream and validates answers with it. A batch's
``--structured schema.json`` is plain JSON Schema, so it is wrapped in a
root model whose schema is the file's own and whose validation is the
``jsonschema`` package's (every violation named, path first), which the
ladder quotes back to the model when it re-asks. ``jsonschema`` is the
``structured`` extra: ``pip install 'laneway[structured]'``.
"""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel, RootModel, model_validator

from laneway.core.errors import RequestInvalid


def schema_model(schema: Any, name: str) -> type[BaseModel]:
    """A model validating answers against ``schema`` (refused here if it is no schema)."""
    try:
        validators = importlib.import_module("jsonschema.validators")
        exceptions = importlib.import_module("jsonschema.exceptions")
    except ImportError:
        raise RequestInvalid(
            "structured",
            "validating a JSON schema needs jsonschema: pip install 'laneway[structured]'",
        ) from None
    if not isinstance(schema, dict):
        raise RequestInvalid("structured", "the schema must be a JSON object")
    kind = validators.validator_for(schema)
    try:
        kind.check_schema(schema)
    except exceptions.SchemaError as exc:
        raise RequestInvalid("structured", f"not a valid JSON schema: {exc.message}") from exc
    validator = kind(schema)

    class SchemaAnswer(RootModel[Any]):
        """An answer that matches the file's schema."""

        @model_validator(mode="after")
        def _matches(self) -> SchemaAnswer:
            errors = sorted(validator.iter_errors(self.root), key=lambda e: list(e.absolute_path))
            if errors:
                raise ValueError("; ".join(describe_violation(error) for error in errors))
            return self

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            """The file's schema, as it is sent upstream."""
            return dict(schema)

    SchemaAnswer.__name__ = SchemaAnswer.__qualname__ = name
    return SchemaAnswer


def describe_violation(error: Any) -> str:
    """``path: message`` of one violation (``(root)`` for the whole answer)."""
    path = ".".join(str(part) for part in error.absolute_path) or "(root)"
    return f"{path}: {error.message}"
