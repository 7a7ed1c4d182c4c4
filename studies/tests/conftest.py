"""The fixtures the study tests share with the package's tests (``tests/conftest.py``: where the shared research data
lives, the optional tools, the CPU state restored after each test; ``tests/models/conftest.py``: small labelled
reachability examples)."""

from tests.conftest import _restore_denormals, clang22, shared_data  # noqa: F401 - fixtures
from tests.models.conftest import reachability_examples  # noqa: F401 - a fixture
