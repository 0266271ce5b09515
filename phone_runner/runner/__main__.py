"""``python -m phone_runner.runner``: see :func:`phone_runner.runner.main`."""

from phone_runner.runner import main

main()
