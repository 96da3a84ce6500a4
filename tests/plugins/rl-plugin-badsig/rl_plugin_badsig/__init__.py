"""Implements a real hook with an argument the spec does not have."""

from rlcore import hookimpl


@hookimpl
def rl_post_steps(trainer, weather):
    return None


@hookimpl
def rl_register_loggers():
    return {"badsig_logger": object}
