"""Hostile backend settings: every constructor keyword of every registered backend.

``KINDS`` says, per kind of setting, which values are hostile (a bool given as a string,
infinities and NaN, negatives, zero, the wrong type). ``SETTINGS`` gives each backend's
keywords their kind and a valid value. Every hostile value must be refused by
``get_backend`` with an error naming the keyword, never turned into a wrong setting
(``bool("false")`` is True) or a raw ``TypeError``; every valid value must be accepted. A
test checks that the table covers every keyword of every registered backend, so a new
setting needs a row.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import CapabilityError, UnknownNameError, ValidationError
from xai_core.plugin.manager import get_registry

INF, NAN = float("inf"), float("nan")

#: Values no setting of a kind may take.
KINDS: dict[str, list[object]] = {
    "bool": ["false", "True", 0, 1, None, [False]],
    "float": [INF, -INF, NAN, -1.0, 0, "3", True, [1.0], None],
    "float_or_none": [INF, -INF, NAN, -1.0, 0, "3", True, [1.0]],
    "latency": [INF, NAN, -1.0, "1", True],  # >= 0, or None for the preset's
    "int": [0, -1, 2.5, 8.0, "8", True, INF, NAN, None],
    "int_or_none": [0, -1, 2.5, "8", True, INF, NAN],
    "name": ["no-such-name", 3, ["v3"], True],
    "name_or_none": ["no-such-name", 3, ["v3"], True],
    "dtype": ["int8", "float16", None, 3, "no-such-type", True],
    "pair": [(0, 4), (4,), (4, 4, 4), (INF, 4), (NAN, 4), ("4", "4"), (True, 4), 4, "44"],
    "triple": [(0, 8, 8), (8, 8), (INF, 8, 8), (8.5, 8, 8), ("8", 8, 8), (True, 8, 8), 8],
    "kib": [
        (INF, 64, 64),
        (NAN, 64, 64),
        (-1, 64, 64),
        (0, 64, 64),
        (64, 64, 1e-300),  # finite and positive, but not one word per buffer half
        ("64", 64, 64),
        64,
        (64, 64),
    ],
    "bw": [INF, NAN, -1.0, 0, "1", (1.0, 1.0), (INF, 1.0, 1.0), True],
}

#: backend -> keyword -> (kind, a valid value, settings it needs beside it).
SETTINGS: dict[str, dict[str, tuple[str, object, dict[str, object]]]] = {
    "cpu": {
        "dtype": ("dtype", "float64", {}),
        "clock_ghz": ("float", 2.5, {}),
        "simd_width": ("int", 16, {}),
    },
    "gpu": {
        "preset": ("name", "a100", {}),
        "precision": ("name", "tf32", {}),
        "tile": ("triple", (64, 64, 8), {}),
        "threads_per_block": ("int", 128, {}),
        "regs_per_thread": ("int", 64, {}),
        "stages": ("int", 3, {}),
        "clock_mhz": ("float_or_none", 1000.0, {}),
    },
}
_SYSTOLIC = {
    "preset": ("name_or_none", "v3", {}),
    "array": ("pair", (8, 16), {}),
    "dataflow": ("name", "os", {}),
    "numerics": ("name_or_none", "bf16", {}),
    "mode": ("name", "step", {}),
    "double_buffered": ("bool", True, {}),
    "clock_mhz": ("float_or_none", 500.0, {}),
    "mxus": ("int_or_none", 2, {}),
    "step_limit": ("float", 1e6, {}),
    "sram_kib": ("kib", (64, 64, 32), {"dram_bw": 8.0}),
    "dram_bw": ("bw", (4.0, 4.0, 8.0), {"sram_kib": (64, 64, 32)}),
}
SETTINGS["tpu"] = dict(_SYSTOLIC)
SETTINGS["edgetpu"] = {
    **_SYSTOLIC,
    "preset": ("name_or_none", "coral", {}),
    "numerics": ("name_or_none", "int8", {}),
}
SETTINGS["tpu_pod"] = {
    "preset": ("name_or_none", "v3-8", {}),
    "dataflow": ("name", "is", {}),
    "double_buffered": ("bool", True, {}),
    "clock_mhz": ("float_or_none", 500.0, {}),
    "ici_latency_us": ("latency", 0, {}),
    "sram_kib": ("kib", (64, 64, 32), {}),
    "dram_bw": ("bw", 8.0, {"sram_kib": (64, 64, 32)}),
}

CASES = [
    pytest.param(backend, key, value, id=f"{backend}-{key}-{value!r}")
    for backend, keys in SETTINGS.items()
    for key, (kind, _, _) in keys.items()
    for value in KINDS[kind]
]


def test_the_table_covers_every_setting_of_every_registered_backend():
    """A backend or a keyword without a row here fails: new settings get hostile cases."""
    for name, cls in get_registry().backends.items():
        params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
        assert name in SETTINGS, f"no hostile cases for backend {name!r}"
        assert sorted(params) == sorted(SETTINGS[name]), name


@pytest.mark.parametrize(
    "backend, key, value",
    [
        pytest.param(b, k, v, id=f"{b}-{k}")
        for b, keys in SETTINGS.items()
        for k, (_, v, _) in keys.items()
    ],
)
def test_every_valid_setting_is_accepted(backend, key, value):
    """The valid value of each row builds the backend, so the hostile rows test only their value."""
    extra = SETTINGS[backend][key][2]
    b = xai.get_backend(backend, **{key: value, **extra})
    assert b.config()["settings"][key] == value


@pytest.mark.parametrize("backend, key, value", CASES)
def test_a_hostile_setting_is_refused_naming_its_keyword(backend, key, value):
    """A string for a bool, inf, NaN, a negative, zero or a wrong type: a clear error."""
    extra = SETTINGS[backend][key][2]
    with pytest.raises((ValidationError, UnknownNameError)) as info:
        xai.get_backend(backend, **{key: value, **extra})
    assert key in str(info.value) or (key == "preset" and "preset" in str(info.value))


@pytest.mark.parametrize("backend", sorted(SETTINGS))
def test_an_unknown_keyword_is_named_with_the_known_ones(backend):
    """A misspelt setting is an UnknownNameError listing the real ones, not Python's TypeError."""
    with pytest.raises(UnknownNameError, match="clock_mhs") as info:
        xai.get_backend(backend, clock_mhs=700)
    assert set(SETTINGS[backend]) <= set(info.value.known)


@pytest.mark.parametrize("backend", sorted(SETTINGS))
def test_too_many_positional_settings_are_refused(backend):
    """Positional settings past the constructor's are a ValidationError, not a TypeError."""
    cls = get_registry().backend(backend)
    with pytest.raises(ValidationError, match="positional"):
        cls(*([None] * 12))


@pytest.mark.parametrize(
    "backend, settings",
    [
        ("tpu", {"preset": "v1"}),
        ("tpu", {"preset": "v1", "mode": "step", "array": (2, 2)}),
        ("edgetpu", {}),
        ("edgetpu", {"mode": "step", "array": (2, 2), "dataflow": "os"}),
    ],
    ids=["v1-closed", "v1-step", "edgetpu-closed", "edgetpu-step"],
)
def test_an_int8_gemm_whose_sums_leave_int32_is_refused_in_every_mode(backend, settings):
    """K = 2**17 products of -128 * -128 sum to 2**31: refused, not wrapped to -2**31."""
    b = xai.get_backend(backend, **settings)
    a = np.full((1, 2**17), -128, np.int8)
    with pytest.raises(CapabilityError, match="int32"):
        b.matmul(a, a.T.copy())
    assert b.counters["matmuls"] == 0  # refused before any work was counted
    short = a[:, : 2**17 - 1]  # the longest K whose sums always fit
    if settings.get("mode") != "step":
        assert b.matmul(short, short.T.copy())[0, 0] == (2**17 - 1) * 2**14
