"""CPU arithmetic on denormal floats, and turning it off while training."""

from __future__ import annotations

import torch


def flush_denormal(enabled: bool = True) -> bool:
    """Flush denormal floats to zero on the CPU (``torch.set_flush_denormal``), or stop doing so.

    Adam's first-moment estimate of a weight whose gradient stays zero (a dead ReLU unit) decays
    by ``beta1`` each step into the denormal range (below ~1e-38) within a few hundred steps;
    x86 CPUs compute on denormals up to a hundred times slower, and the optimizer step of a small
    network then costs ten times more. Flushing them to zero changes nothing a network learns.
    The off-policy losses turn it on at ``rl_setup`` and off at ``rl_shutdown``.

    :param enabled: flush (``True``) or keep denormals (``False``, torch's default).
    :return: whether the CPU supports it.
    """
    return bool(torch.set_flush_denormal(enabled))
