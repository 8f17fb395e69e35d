"""`python -m harness` is `zlh`."""
from .cli import main

if __name__ == "__main__":  # pragma: no cover
    main(prog_name="zlh")
