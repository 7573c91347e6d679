"""`python -m cli`: the same as the `idemdash` console script."""
from cli import main

main()
