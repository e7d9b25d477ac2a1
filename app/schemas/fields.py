"""What a request field accepts: exactly what its JSON Schema says, and the bounds every endpoint shares."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, Strict

Encoding = Literal["list", "base64"]
DType = Literal["float32", "float16"]
StackName = Literal["encoder", "decoder"]


def json_number(value: object, integral: bool) -> object:
    """What JSON Schema calls a number (an integer: also 2.0), never a boolean or a string."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("Input should be a valid " + ("integer" if integral else "number"))
    if integral and isinstance(value, float) and not value.is_integer():
        raise ValueError("Input should be a valid integer")
    return value


# Request fields take exactly what their JSON Schema says: pydantic's lax mode would also take `true` as 1,
# "3" as 3 and 1 as true, which the schema forbids (tests/contract checks the two agree).
INTEGER = BeforeValidator(lambda v: json_number(v, integral=True))
NUMBER = BeforeValidator(lambda v: json_number(v, integral=False))
Int = Annotated[int, INTEGER]
Float = Annotated[float, NUMBER]  # optional ones put their bounds first: Annotated[float, Field(...), NUMBER]
Bool = Annotated[bool, Strict()]

LIMITS = {"d_model": 1024, "n_layers": 12, "n_heads": 16, "d_mlp": 4096}
# a stage name or pattern: the longest name of any model served is under 60 characters, and a bound keeps a
# pattern's matching cheap (fnmatch's translation of "[[[..." grows with the square of its length: 15,000
# characters took 8 s of the event loop)
StageName = Annotated[str, Field(min_length=1, max_length=128)]

# A text the server reads as text (a prompt, a sentence, an answer token): at least one character. The minLength is
# stated in the schema only: pydantic's own length check refuses lone surrogates, which are valid input here; the
# server refuses "" itself (empty_text, or the field's own 422), so the schema says what the server refuses.
Text = Annotated[str, Field(json_schema_extra={"minLength": 1})]
