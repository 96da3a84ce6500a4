"""The ``rlctl export`` command (light: click only; torch is imported when it runs)."""

from __future__ import annotations

import json

import click


@click.command("export")
@click.argument("run", metavar="RUN", type=click.Path(exists=True))
@click.option("--format", "format_", type=click.Choice(["torchscript", "onnx"]), default="torchscript", show_default=True, help="The file's format.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="The file to write; default RUN/policy.pt or RUN/policy.onnx.")
@click.option("--checkpoint", "checkpoint_path", type=click.Path(exists=True), help="A checkpoint of the run; default its newest.")
@click.option("--check", default=1000, show_default=True, type=click.IntRange(min=2), help="Observations the parity check compares actions on.")
def export(run: str, format_: str, output: str | None, checkpoint_path: str | None, check: int) -> None:
    """Write a run's deterministic policy as TorchScript or ONNX, preprocessing included, checked against the original (rl-plugin-export)."""
    from ._export import export_policy

    click.echo(json.dumps(export_policy(run, format_, output, checkpoint=checkpoint_path, check=check), indent=2))


__all__ = ["export"]
