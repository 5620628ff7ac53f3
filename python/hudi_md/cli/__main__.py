"""``python -m hudi_md.cli``."""

from hudi_md.cli import main

main()
