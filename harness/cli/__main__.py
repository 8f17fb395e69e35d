"""`python -m harness.cli` is `zlh` too."""
from . import main

main(prog_name="zlh")
