"""The ``tao`` command line: ``tao run``, ``tao runs ...``, ``tao serve``."""
