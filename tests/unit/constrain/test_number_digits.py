"""Numbers end: digits are capped where the schema's bounds do not need more."""

from __future__ import annotations

from tests.unit.constrain.chars import schema_accepts


def test_integer_digits_are_capped_by_default() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    assert schema_accepts(schema, '{"answer": ' + "9" * 20 + "}")
    assert not schema_accepts(schema, '{"answer": ' + "1" + "0" * 20)  # the 21st digit is refused


def test_fraction_and_exponent_digits_are_capped() -> None:
    assert schema_accepts({"type": "number"}, "0." + "3" * 20)
    assert not schema_accepts({"type": "number"}, "0." + "3" * 21)
    assert schema_accepts({"type": "number"}, "1e308")
    assert not schema_accepts({"type": "number"}, "1e3080")


def test_bounds_that_need_more_digits_still_get_them() -> None:
    big = {"type": "integer", "minimum": 0, "maximum": 10**30}
    assert schema_accepts(big, "9" * 30)
    fine = {"type": "number", "multipleOf": 1e-25}  # its multiples need 25 decimal places
    assert schema_accepts(fine, "0." + "0" * 24 + "3")
    assert not schema_accepts({"type": "number"}, "0." + "0" * 24 + "3")
