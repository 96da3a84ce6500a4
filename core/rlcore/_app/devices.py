"""The devices a run may name: those torch knows and this machine has."""

from __future__ import annotations

from .._kernel.errors import ConfigError, shown


def auto_device() -> str:
    """``trainer.device: auto``: ``cuda`` when this machine has a CUDA device, else ``cpu``."""
    import torch  # (lazy: a config is read and checked without torch)

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(device: str, key: str) -> None:
    """Refuse a device torch does not know or this machine does not have.

    :raises ConfigError: naming ``key`` and the devices there are.
    """
    if device == "cpu":
        return
    import torch  # (lazy: a config is read and checked without torch)

    available = ["cpu"]
    if torch.cuda.is_available():
        available += ["cuda", *(f"cuda:{i}" for i in range(torch.cuda.device_count()))]
    if torch.backends.mps.is_available():
        available.append("mps")
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        raise ConfigError(f"{key}: unknown device {shown(device)} (valid choices: {', '.join(available)})") from None
    index = parsed.index or 0
    usable = (
        (parsed.type == "cpu" and index == 0)
        or (parsed.type == "cuda" and torch.cuda.is_available() and index < torch.cuda.device_count())
        or (parsed.type == "mps" and torch.backends.mps.is_available())
    )
    if not usable:
        raise ConfigError(f"{key}: {shown(device)} is not available on this machine (valid choices: {', '.join(available)})")
