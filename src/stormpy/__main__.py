"""``python -m stormpy`` is the ``stormpy`` command (as ``python -m stormpy.cli``)."""

from stormpy.cli.main import main

main()
