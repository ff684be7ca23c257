"""Refuses NumPy 1.x at import, with a message that says so.

NumPy 1.x wraps out-of-range Python ints (300 into int8) and builds ragged lists into object
arrays where NumPy 2 raises, so on it some bad updates would pass scatterkit's checks.
"""

import numpy

if int(numpy.__version__.split(".")[0]) < 2:
    raise ImportError(f"scatterkit needs NumPy >= 2.0; NumPy {numpy.__version__} is installed")
