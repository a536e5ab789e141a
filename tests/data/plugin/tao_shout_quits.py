"""A plugin module that ends the process as it is imported (tao must survive it)."""

import sys

sys.exit(3)
