"""``python -m tao`` is the ``tao`` command."""

from tao.cli.main import main

main()
