"""The base model every contract derives from."""

from pydantic import BaseModel, ConfigDict


class StrictBase(BaseModel):
    """A pydantic model that rejects unknown fields.

    `extra="forbid"` makes the JSON schema carry `additionalProperties: false`, which is what strict
    structured outputs need, and it turns a typo in a field name into an error instead of a silent drop.
    """

    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=False)
