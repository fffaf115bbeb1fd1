"""Run only when ``python -m marketsim`` is typed in the folder that *contains* the clone.

Python then imports the clone's root folder (``./marketsim/``, holding ``pyproject.toml`` and the
real ``marketsim/`` package) as a namespace package and runs this file instead of the package's
``marketsim/__main__.py``. Say what to do in one line instead of failing with an ImportError, or
silently running another installed copy of marketsim.
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.stderr.write(
    f"marketsim: error: {here} is the marketsim checkout, not the package: run from inside it "
    f"(cd {here}) or install it (pip install -e {here})\n"
)
raise SystemExit(2)
