"""Implements a hook that does not exist."""

from rlcore import hookimpl


@hookimpl
def rl_not_a_hook(trainer):
    return None
