"""rl-core's embedded defaults, registered through rl-core's own entry points like any plugin."""
