"""A realistic trainer state for checkpoint tests, and a strict comparison of states."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def realistic_state(seed: int = 0) -> dict[str, Any]:
    """A state shaped like :meth:`rlcore.Trainer.state_dict`'s, with every kind of value a checkpoint holds.

    Nested dicts with integer keys (an optimizer's state), a module's ``state_dict``, tensors of
    several dtypes (``bfloat16`` and ``bool`` among them), numpy arrays and scalars, RNG states and
    plain Python values (``None``, ``bool``, ``int`` beyond 32 bits, ``float``, ``str``, lists and tuples).

    :param seed: makes the tensors and arrays differ from one state to another.
    """
    import numpy as np
    import torch

    generator = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator))
    # an Adam state_dict after 10 steps, written out: building torch.optim.Adam imports torch._dynamo (seconds)
    moments = [torch.randn(p.shape, generator=generator) for p in model.parameters()]
    optimizer = {
        "state": {i: {"step": torch.tensor(10.0), "exp_avg": m, "exp_avg_sq": m.square()} for i, m in enumerate(moments)},
        "param_groups": [
            {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "amsgrad": False, "maximize": False,
             "foreach": None, "capturable": False, "differentiable": False, "fused": None, "params": list(range(len(moments)))}
        ],
    }  # fmt: skip
    rng = np.random.default_rng(seed)
    return {
        "version": 1,
        "counters": {"collected_frames": 4096 + seed, "batches": 16, "optim_steps": 64, "last_log": {"train/episode_return": 4096}},
        "loss_module": model.state_dict(),
        "optimizer": optimizer,
        "modules": {
            "counter": {"count": 7, "frames": [128, 256], "big": 2**40},
            "schedule": {"lr": 3e-4, "done": False, "name": None, "kind": "linear", "window": (1.5, -0.25, float("inf"))},
        },
        "tensors": {
            "float32": torch.randn(3, 5, generator=generator),
            "float64": torch.randn(7, dtype=torch.float64, generator=generator),
            "float16": torch.randn(4, generator=generator).half(),
            "bfloat16": torch.randn(4, generator=generator).bfloat16(),
            "int64": torch.randint(-(2**40), 2**40, (6,), generator=generator),
            "int32": torch.randint(-100, 100, (2, 3), dtype=torch.int32, generator=generator),
            "uint8": torch.randint(0, 256, (9,), dtype=torch.uint8, generator=generator),
            "bool": torch.rand(5, generator=generator) > 0.5,
            "scalar": torch.tensor(2.5 + seed),
            "empty": torch.empty(0, 3),
        },
        "numpy": {
            "float32": rng.standard_normal(4).astype(np.float32),
            "float64": rng.standard_normal((2, 2)),
            "int64": rng.integers(-(2**40), 2**40, 3),
            "uint32": rng.integers(0, 2**32, 3, dtype=np.uint32),
            "bool": np.array([True, False, True]),
            "f64": np.float64(0.5 + seed),
            "i64": np.int64(-3),
        },
        "rng": {"torch": torch.get_rng_state(), "numpy": np.random.RandomState(seed).get_state()},
    }


def assert_state_equal(expected: Any, actual: Any, where: str = "state") -> None:
    """Assert that a state read back is the state saved: structure, types and values, tensors and arrays bit for bit.

    Mappings compare as mappings (a backend may give back a ``dict`` for an ``OrderedDict``), with
    their keys in the same order; everything else keeps its exact type (a tuple stays a tuple, an
    ``int`` an ``int``, a ``numpy.float32`` a ``numpy.float32``). NaN equals NaN.

    :param expected: the state saved.
    :param actual: the state read back.
    :param where: the path shown in a failure, e.g. ``state['optimizer']['state'][0]``.
    :raises AssertionError: naming the first place where they differ.
    """
    import numpy as np
    import torch

    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            raise AssertionError(f"{where}: expected a mapping, got {type(actual).__name__}")
        if list(actual) != list(expected):
            raise AssertionError(f"{where}: keys {list(actual)!r} != {list(expected)!r}")
        for key in expected:
            assert_state_equal(expected[key], actual[key], f"{where}[{key!r}]")
        return
    if type(actual) is not type(expected):
        raise AssertionError(f"{where}: type {type(actual).__name__} != {type(expected).__name__}")
    if isinstance(expected, torch.Tensor):
        if (actual.dtype, actual.shape) != (expected.dtype, expected.shape):
            raise AssertionError(f"{where}: {actual.dtype}{list(actual.shape)} != {expected.dtype}{list(expected.shape)}")
        if not _same_bytes(actual, expected):
            raise AssertionError(f"{where}: tensor values differ")
    elif isinstance(expected, np.ndarray):
        if (actual.dtype, actual.shape) != (expected.dtype, expected.shape):
            raise AssertionError(f"{where}: {actual.dtype}{list(actual.shape)} != {expected.dtype}{list(expected.shape)}")
        if actual.tobytes() != expected.tobytes():
            raise AssertionError(f"{where}: array values differ")
    elif isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(f"{where}: length {len(actual)} != {len(expected)}")
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_state_equal(e, a, f"{where}[{index}]")
    elif not (actual == expected or _both_nan(actual, expected)):
        raise AssertionError(f"{where}: {actual!r} != {expected!r}")


def _same_bytes(a: Any, b: Any) -> bool:
    import torch

    flat_a, flat_b = a.detach().cpu().contiguous().reshape(-1), b.detach().cpu().contiguous().reshape(-1)
    return bool(torch.equal(flat_a.view(torch.uint8), flat_b.view(torch.uint8)))


def _both_nan(a: Any, b: Any) -> bool:
    try:
        return math.isnan(a) and math.isnan(b)
    except TypeError:
        return False
