"""The built site, shared by every test of ``tests/docs`` that reads it.

Session-scoped: one build per test process (about half a minute of CPU). Under pytest-xdist
that is once per worker that runs a site test; ``pytest.mark.xdist_group`` would pin them to
one worker, but only ``--dist loadgroup`` honours it and pyproject's addopts use ``--dist
worksteal``, which starts each worker on one contiguous half of the tests: the site tests, next
to each other in ``tests/docs``, mostly land on one worker, and a stolen one builds once more.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.built_site import build_site


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as the README's command builds it, built once per test process."""
    return build_site(tmp_path_factory.mktemp("site"))
