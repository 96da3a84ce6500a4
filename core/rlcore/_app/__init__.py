"""rl-core's application, on the kernel: the config, the run builder, the run directory, the CLI, evaluation and env making.

Its public names are exported by :mod:`rlcore`; the builtin plugins and any other plugin use those.
"""
