"""`python -m idemdash.cli`: the same as the `idemdash` console script."""

from idemdash.cli import main

main()
