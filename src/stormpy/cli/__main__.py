"""``python -m stormpy.cli`` is the ``stormpy`` command."""

from stormpy.cli.main import main

main()
