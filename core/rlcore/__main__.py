"""``python -m rlcore`` is ``rlctl``."""

from ._app.cli import main

main()
