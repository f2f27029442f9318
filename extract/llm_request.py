"""The extraction request: the exact keyword arguments sent for one segment (also a Batch API line's body).

The strict JSON schema is built from the contract by the SDK's own helper (`to_strict_json_schema`), but the
reply is read as raw text, never with `.parse()`: pydantic would reject a near-miss such as type "Project"
before the semantic mapper could map it, and the raw text must be kept for staging either way.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from openai.lib._pydantic import to_strict_json_schema

from contracts.concepts import ExtractionResponse
from contracts.errors import ConfigError
from contracts.settings import LLMSettings
from extract.prompts import RESPONSE_NAME


@cache
def strict_schema() -> dict[str, Any]:
    """The strict JSON schema of ExtractionResponse (additionalProperties false, every property required)."""
    return to_strict_json_schema(ExtractionResponse)


def build_request(settings: LLMSettings, messages: list[dict[str, str]]) -> dict[str, Any]:
    """The request body for settings.api, with the strict schema; optional parameters only when set."""
    schema = strict_schema()
    body: dict[str, Any] = {"model": settings.model}
    if settings.api == "chat":
        body["messages"] = messages
        if settings.structured_output == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": RESPONSE_NAME, "schema": schema, "strict": True},
            }
        else:  # llama.cpp's server turns this schema into a grammar; it rejects type json_schema
            body["response_format"] = {"type": "json_object", "schema": schema}
        if settings.reasoning_effort is not None:
            body["reasoning_effort"] = settings.reasoning_effort
        if settings.max_output_tokens is not None:
            # OpenAI's reasoning models reject max_tokens; servers without json_schema (llama.cpp) only know it.
            name = "max_completion_tokens" if settings.structured_output == "json_schema" else "max_tokens"
            body[name] = settings.max_output_tokens
        if settings.seed is not None:
            body["seed"] = settings.seed
    else:
        if settings.structured_output != "json_schema":
            raise ConfigError("api 'responses' needs structured_output 'json_schema'")
        body["input"] = messages
        body["text"] = {"format": {"type": "json_schema", "name": RESPONSE_NAME, "schema": schema, "strict": True}}
        if settings.reasoning_effort is not None:
            body["reasoning"] = {"effort": settings.reasoning_effort}
        if settings.max_output_tokens is not None:
            body["max_output_tokens"] = settings.max_output_tokens
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    return body
