"""rl-core plugin: ``rlctl export RUN --format torchscript|onnx [-o FILE]``, a run's policy outside Python's training stack.

The file holds the deterministic policy with the run's observation preprocessing baked in (the
normalisation wrappers, with the checkpoint's statistics); what each env's wrappers keep between steps
(a frame stack) is the input's own shape. Before it says it is done, the command checks the file: the
actions of the original policy on 1,000 observations of the run's env against the file's, run by
``torch.jit.load`` or ``onnxruntime``, within 1e-5. From Python::

    from rl_plugin_export import export_policy

    report = export_policy("runs/mine", "onnx", "policy.onnx")

This module stays light: torch is imported only when a policy is exported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcore import hookimpl, lazy_getattr

if TYPE_CHECKING:
    import click

    from ._export import FORMATS, export_policy

__version__ = "0.1.0"

_LAZY = {"export_policy": "._export", "FORMATS": "._export"}

__all__ = ["FORMATS", "export_policy"]

__getattr__ = lazy_getattr(__name__, _LAZY)


@hookimpl
def rl_register_commands(cli: click.Group) -> None:
    """``rlctl export``."""
    from ._command import export

    cli.add_command(export)
