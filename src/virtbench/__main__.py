"""`python -m virtbench`: the same command as the installed `virtbench`."""

from .cli import main

main()
