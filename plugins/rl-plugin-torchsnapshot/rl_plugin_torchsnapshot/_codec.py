"""A checkpoint state as a JSON skeleton plus a flat dict of tensors, and back.

torchsnapshot stores tensors well but pickles (``torch.save``) every other object, and its own
containers lose tuples. So the plugin splits the state itself:

- every tensor and numpy array becomes an entry ``t<i>`` of a flat ``{name: tensor}`` dict
  that torchsnapshot writes; dtypes its raw-buffer serializer lacks (bfloat16, complex,
  unsigned ints beyond uint8, float8, ...) and numpy arrays travel as a ``uint8`` view of their bytes;
- everything else becomes a JSON skeleton in which each tensor is a record (name, dtype,
  shape, CRC-32 of its bytes).

Decoding reads only JSON and raw tensor bytes: no pickle is involved. The CRC-32 of each
tensor catches corruption that keeps a file's size (torchsnapshot itself has no checksums).
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from rlcore import CheckpointError

FORMAT = "rl-plugin-torchsnapshot"
VERSION = 1

#: Dtypes that torchsnapshot writes as raw bytes (``buffer_protocol``) without deprecated
#: storage APIs; every other dtype is stored as a ``uint8`` view of its bytes.
NATIVE_DTYPES = frozenset(
    {torch.float64, torch.float32, torch.float16, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool}
)
_PRIMITIVES = (type(None), bool, int, str)


def encode(state: Mapping[str, Any]) -> tuple[bytes, dict[str, torch.Tensor]]:
    """Split ``state`` into a JSON skeleton and the tensors torchsnapshot writes.

    :param state: nested dicts, lists and tuples of tensors, numpy arrays and plain values.
    :return: the UTF-8 JSON skeleton and ``{name: contiguous CPU tensor}``.
    :raises TypeError: for a value it cannot store, naming where it is in ``state``.
    """
    encoder = _Encoder()
    root = encoder.encode(state, "state")
    skeleton = json.dumps({"format": FORMAT, "version": VERSION, "state": root}, separators=(",", ":"))
    return skeleton.encode("utf-8"), encoder.tensors


def decode(skeleton: bytes, tensors: Mapping[str, torch.Tensor]) -> dict[str, Any]:
    """Rebuild the state written by :func:`encode`.

    :param skeleton: the JSON skeleton.
    :param tensors: the tensors read back from the snapshot.
    :return: the state, with tensors on the CPU.
    :raises CheckpointError: when the skeleton is malformed or a tensor is missing or corrupted.
    """
    try:
        document = json.loads(skeleton.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"the state skeleton is not valid JSON ({err})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CheckpointError(f"not a {FORMAT} checkpoint")
    if document.get("version") != VERSION:
        raise CheckpointError(f"unsupported {FORMAT} format version {document.get('version')!r} (this plugin reads {VERSION})")
    try:
        state = _Decoder(tensors).decode(document["state"])
    except CheckpointError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, RuntimeError) as err:
        raise CheckpointError(f"the state skeleton is malformed ({type(err).__name__}: {err})") from None
    if not isinstance(state, dict):
        raise CheckpointError("the state skeleton does not hold a dict")
    return state


def crc32(tensor: torch.Tensor) -> int:
    """The CRC-32 of a contiguous CPU tensor's bytes.

    :param tensor: the tensor.
    """
    return zlib.crc32(tensor.reshape(-1).view(torch.uint8).numpy().data) if tensor.numel() else 0


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None) if isinstance(name, str) else None
    if not isinstance(dtype, torch.dtype):
        raise CheckpointError(f"unknown torch dtype {name!r}")
    return dtype


def _numpy_dtype(name: str) -> np.dtype[Any]:
    try:
        dtype = np.dtype(name)
    except TypeError:
        raise CheckpointError(f"unknown numpy dtype {name!r}") from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise CheckpointError(f"refusing numpy dtype {name!r}")
    return dtype


def _check_numpy_dtype(dtype: np.dtype[Any], where: str) -> None:
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise TypeError(f"cannot checkpoint a numpy value of dtype {dtype} at {where}: only plain dtypes are supported")


class _Encoder:
    """Walks the state once, collecting tensors; each node becomes JSON (see :func:`encode`)."""

    def __init__(self) -> None:
        self.tensors: dict[str, torch.Tensor] = {}
        self._seen: dict[int, dict[str, Any]] = {}  # id(tensor) -> its record, so shared tensors stay shared

    def encode(self, value: Any, where: str, key: bool = False) -> Any:
        if type(value) in _PRIMITIVES:
            return value
        if type(value) is float:
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(value, tuple) and type(value) is not torch.Size:
            return {"tuple": [self.encode(v, f"{where}[{i}]", key) for i, v in enumerate(value)]}
        if isinstance(value, np.generic):  # before float: np.float64 subclasses float
            _check_numpy_dtype(value.dtype, where)
            return {"numpy_scalar": {"dtype": value.dtype.str, "hex": value.tobytes().hex()}}
        if key:
            raise TypeError(f"cannot checkpoint a dict key of type {type(value).__name__} at {where}")
        if isinstance(value, torch.Tensor):
            return self._tensor(value, where)
        if isinstance(value, np.ndarray):
            return self._array(value, where)
        if isinstance(value, Mapping):
            items = [
                [self.encode(k, f"{where} key {k!r}", key=True), self.encode(v, f"{where}[{k!r}]")]
                for k, v in value.items()
            ]
            if not isinstance(value, OrderedDict):
                return {"dict": items}
            node: dict[str, Any] = {"ordered_dict": items}
            metadata = getattr(value, "_metadata", None)  # nn.Module.state_dict() versions
            if metadata is not None:
                node["metadata"] = self.encode(metadata, f"{where}._metadata")
            return node
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, bytes):
            return {"bytes": base64.b64encode(value).decode("ascii")}
        if isinstance(value, torch.Size):
            return {"size": list(value)}
        if isinstance(value, torch.dtype):
            return {"dtype": _dtype_name(value)}
        if isinstance(value, torch.device):
            return {"device": str(value)}
        raise TypeError(
            f"cannot checkpoint a value of type {type(value).__module__}.{type(value).__qualname__} at {where}; "
            "store tensors, numpy arrays, plain Python values and dicts/lists/tuples of them"
        )

    def _tensor(self, value: torch.Tensor, where: str) -> dict[str, Any]:
        if id(value) in self._seen:
            return {"tensor": self._seen[id(value)]}
        if value.layout != torch.strided or value.is_quantized or value.is_meta:
            raise TypeError(f"cannot checkpoint a {value.layout} / quantized / meta tensor at {where}")
        data = value.detach().cpu().contiguous()
        record: dict[str, Any] = {"dtype": _dtype_name(data.dtype), "shape": list(data.shape)}
        if value.requires_grad:
            record["requires_grad"] = True
        if isinstance(value, torch.nn.Parameter):
            record["parameter"] = True
        record |= self._store(data if data.dtype in NATIVE_DTYPES else data.reshape(-1).view(torch.uint8))
        self._seen[id(value)] = record
        return {"tensor": record}

    def _array(self, value: np.ndarray, where: str) -> dict[str, Any]:
        _check_numpy_dtype(value.dtype, where)
        data = np.ascontiguousarray(value).reshape(-1)  # (ascontiguousarray turns 0-d into 1-d)
        if not data.flags.writeable:
            data = data.copy()  # torch.from_numpy warns on read-only arrays
        record = {"dtype": value.dtype.str, "shape": list(value.shape)}
        return {"ndarray": record | self._store(torch.from_numpy(data.view(np.uint8)))}

    def _store(self, data: torch.Tensor) -> dict[str, Any]:
        """Queue ``data`` for torchsnapshot; empty tensors are kept in the skeleton only
        (torchsnapshot 0.1.0 fails on them: ``memoryview: cannot cast view with zeros in shape``)."""
        if data.numel() == 0:
            return {"name": None}
        name = f"t{len(self.tensors)}"
        self.tensors[name] = data
        return {"name": name, "crc32": crc32(data)}


class _Decoder:
    """The inverse of :class:`_Encoder`."""

    def __init__(self, tensors: Mapping[str, torch.Tensor]) -> None:
        self._tensors = tensors
        self._built: dict[str, torch.Tensor] = {}  # name -> tensor, so shared tensors stay shared

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict) or len(node) not in (1, 2):
            raise CheckpointError(f"unexpected node {str(node)[:80]!r} in the state skeleton")
        tag, body = next(iter(node.items()))
        if tag in ("dict", "ordered_dict"):
            items = [(self._key(k), self.decode(v)) for k, v in body]
            if tag == "dict":
                return dict(items)
            result = OrderedDict(items)
            if "metadata" in node:
                result._metadata = self.decode(node["metadata"])  # type: ignore[attr-defined]
            return result
        if tag == "tuple":
            return tuple(self.decode(v) for v in body)
        if tag == "tensor":
            return self._tensor(body)
        if tag == "ndarray":
            dtype = _numpy_dtype(body["dtype"])
            raw = self._data(body, torch.uint8, [math.prod(body["shape"]) * dtype.itemsize])
            return raw.numpy().view(dtype).reshape(body["shape"])
        if tag == "numpy_scalar":
            return np.frombuffer(bytes.fromhex(body["hex"]), dtype=_numpy_dtype(body["dtype"]))[0]
        if tag == "float":
            return float(body)
        if tag == "bytes":
            return base64.b64decode(body, validate=True)
        if tag == "size":
            return torch.Size(body)
        if tag == "dtype":
            return _torch_dtype(body)
        if tag == "device":
            return torch.device(body)
        raise CheckpointError(f"unknown node {tag!r} in the state skeleton")

    def _key(self, node: Any) -> Any:
        key = self.decode(node)
        hash(key)  # a TypeError here is a malformed skeleton
        return key

    def _tensor(self, record: dict[str, Any]) -> torch.Tensor:
        name = record["name"]
        if name is not None and name in self._built:
            return self._built[name]
        dtype, shape = _torch_dtype(record["dtype"]), torch.Size(record["shape"])
        if dtype in NATIVE_DTYPES:
            tensor = self._data(record, dtype, shape)
        else:
            raw = self._data(record, torch.uint8, [shape.numel() * dtype.itemsize])
            tensor = raw.view(dtype).reshape(shape)
        if record.get("parameter"):
            tensor = torch.nn.Parameter(tensor, requires_grad=bool(record.get("requires_grad")))
        elif record.get("requires_grad"):
            tensor.requires_grad_(True)
        if name is not None:
            self._built[name] = tensor
        return tensor

    def _data(self, record: dict[str, Any], dtype: torch.dtype, shape: list[int] | torch.Size) -> torch.Tensor:
        """The stored tensor of ``record``, checked against the expected dtype, shape and CRC-32."""
        name = record["name"]
        if name is None:
            return torch.empty(shape, dtype=dtype)
        if name not in self._tensors:
            raise CheckpointError(f"tensor {name} is missing from the snapshot")
        data = self._tensors[name]
        if data.dtype != dtype or list(data.shape) != list(shape):
            raise CheckpointError(
                f"tensor {name} is {data.dtype}{list(data.shape)} in the snapshot, expected {dtype}{list(shape)}"
            )
        if crc32(data) != record["crc32"]:
            raise CheckpointError(f"tensor {name} is corrupted (CRC-32 mismatch)")
        return data
