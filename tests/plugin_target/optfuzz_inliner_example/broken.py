"""A target module that fails on import (its dependency is not installed): optfuzz lists it
with one warning line and refuses it with a one-line error."""

import optfuzz_example_dependency_that_is_not_installed  # noqa: F401

BrokenTarget = None
