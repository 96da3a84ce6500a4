"""rl-core's kernel: the plugin manager, the trainer loop, the option validator, the typed contracts and the errors.

It imports nothing above it (the application, the builtins, any plugin): import-linter's contracts in
``pyproject.toml`` say so, and CI checks them. Its public names are exported by :mod:`rlcore`.
"""
