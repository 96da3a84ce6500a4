"""``python -m rlcore`` is ``rlctl``."""

from ._cli import main

main()
