"""Every JSON body goes through ApiJSONResponse.render: compact UTF-8, never NaN or Infinity, any string."""

from __future__ import annotations

import json

import numpy as np

from app.compression import ApiJSONResponse


def render(content: object) -> object:
    body = ApiJSONResponse(None).render(content)
    return json.loads(body)  # strict JSON: would refuse NaN / Infinity


def test_numbers_round_trip_and_non_finite_becomes_null() -> None:
    assert render({"x": [0.1234, -2.5e-05, 1e16, float("nan"), float("inf"), None, 3]}) == {
        "x": [0.1234, -2.5e-05, 1e16, None, None, None, 3]
    }
    assert render({"a": np.array([[0.5, 0.25]]), 2: "key"}) == {"a": [[0.5, 0.25]], "2": "key"}


def test_chinese_stays_utf8_and_a_lone_surrogate_still_gives_valid_json() -> None:
    assert ApiJSONResponse(None).render({"t": "我爱北京"}) == '{"t":"我爱北京"}'.encode()
    assert render({"t": "a\ud800b"}) == {"t": "a\ud800b"}
    assert render({"n": 2**70}) == {"n": 2**70}  # past 64 bits: the json fallback
    # a tensor's data travels as a float64 array (app.tensors): the fallback writes it as lists too
    mixed = {"t": "\ud800", "data": np.array([[0.1234, -2.5e-05]])}
    assert render(mixed) == {"t": "\ud800", "data": [[0.1234, -2.5e-05]]}


def test_a_tensor_renders_to_the_same_bytes_as_its_lists() -> None:
    import torch

    from app.tensors import encode_tensor

    generator = torch.Generator().manual_seed(0)
    tensor = torch.randn(1, 5, 7, generator=generator) * 10.0 ** torch.randint(-6, 6, (1, 5, 7), generator=generator)
    encoded = encode_tensor("x", tensor, ("batch", "pos", "d_model"))
    as_lists = {**encoded, "data": np.asarray(encoded["data"]).tolist()}
    assert ApiJSONResponse(None).render(encoded) == ApiJSONResponse(None).render(as_lists)
    assert render(encoded)["data"] == [[float(f"{v:.4g}") for v in row] for row in tensor[0].tolist()]


def test_strided_and_scalar_tensors_render_with_orjson_itself() -> None:
    """orjson refuses numpy arrays that are not C-contiguous or have no dimension; the json fallback would take
    the whole answer (several times slower): encode_tensor hands orjson only what it takes."""
    import orjson
    import torch

    from app.tensors import encode_tensor

    strided = torch.arange(12.0).reshape(1, 3, 4).transpose(1, 2)  # like hook_z: a view, not contiguous
    scalars = [(torch.tensor(0.123456), ()), (torch.tensor(float("-inf")), ())]  # -inf: null, as masked cells
    for tensor, dims in [(strided, ("batch", "d_head", "pos")), *scalars]:
        encoded = encode_tensor("x", tensor, dims)
        written = orjson.loads(orjson.dumps(encoded, option=orjson.OPT_SERIALIZE_NUMPY))  # raises if refused
        assert written["data"] == np.asarray(encoded["data"]).tolist()
    assert orjson.loads(orjson.dumps(encode_tensor("x", strided, ("batch", "d_head", "pos")),
                                     option=orjson.OPT_SERIALIZE_NUMPY))["data"] == strided[0].tolist()


def test_round_significant_is_the_nearest_double_to_the_four_digit_decimal() -> None:
    """Within float32's range: what `f"{x:.4g}"` reads back as, to the last bit where 10**k is exact
    (k <= 22) and within one unit in the last place for tinier values."""
    import numpy as np

    from app.tensors import round_significant

    rng = np.random.default_rng(1)
    values = (rng.standard_normal(50_000) * 10.0 ** rng.integers(-30, 30, 50_000)).astype(np.float32)
    edges = np.array([0.0, 9.9995, 99995.0, 1e-3], dtype=np.float32)
    values = np.concatenate([values, (10.0 ** np.arange(-40, 38)).astype(np.float32), edges])  # all float32
    rounded = round_significant(values)
    expected = np.array([float(f"{float(v):.4g}") for v in values])
    np.testing.assert_allclose(rounded, expected, rtol=4.5e-16, atol=0)
    usual = (np.abs(values) >= 1e-18) & (np.abs(values) < 1e4)
    assert np.array_equal(rounded[usual], expected[usual])
    special = round_significant(np.array([np.inf, -np.inf, np.nan], dtype=np.float32))
    assert np.isposinf(special[0]) and np.isneginf(special[1]) and np.isnan(special[2])


def test_the_decimal_exponent_in_integers_is_floor_of_log10_of_two_powers() -> None:
    """round_significant's floor((binary - 1) * log10(2)), done in integers, over every binary exponent a float64
    has (subnormals included)."""
    binary = np.arange(-1075, 1026)
    assert np.array_equal(((binary - 1) * 78913) >> 18, np.floor((binary - 1) * np.log10(2.0)).astype(np.int64))
