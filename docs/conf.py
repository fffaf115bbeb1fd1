"""Sphinx configuration of marketsim's documentation site.

Build it with ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` after
``python -m pip install -e ".[docs]"``.

Why Sphinx (and not MkDocs): the package's docstrings already use Sphinx's roles
(``:func:``, ``:class:``, ``:mod:``), which autodoc resolves and MkDocs would print as text, and
the libraries marketsim's users know (scikit-learn, SciPy, pandas) publish their sites with it.
The Markdown pages are read as they are by MyST-Parser; the notebook is rendered by MyST-NB from
its stored outputs (never executed while building). Most docstrings are prose with Sphinx
roles and some have NumPy-style sections (Attributes, Examples): numpydoc renders both without
a warning.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # the package of this source tree, not another install

from marketsim import __version__  # noqa: E402

project = "marketsim"
author = "the marketsim authors"
copyright = "2026, the marketsim authors"  # noqa: A001
release = __version__
version = __version__

extensions = [
    "myst_nb",  # MyST-Parser's Markdown and the notebook
    "sphinx.ext.autodoc",
    "numpydoc",  # the NumPy-style sections some docstrings have (Attributes, Examples, Returns)
    "sphinx.ext.viewcode",
    "marketsim_reference",  # the generated reference (docs/_ext/marketsim_reference.py)
]

exclude_patterns = ["_build", "_ext", "**/.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"

# MyST: anchors for headings down to ###, so the pages' [text](page.md#heading) links resolve.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
# The notebook is shown with the outputs stored in it: a build never runs it. After changing
# what it shows, store fresh outputs: `python -m jupyter nbconvert --to notebook --execute
# --inplace docs/tutorial.ipynb` (nbconvert), or nbclient as tests/cli/test_tutorial.py runs it.
nb_execution_mode = "off"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}

html_theme = "pydata_sphinx_theme"
html_title = f"marketsim {version}"
html_static_path = ["_static"]
html_css_files = ["marketsim.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
html_show_sourcelink = False

# numpydoc reads the docstrings' NumPy-style sections and leaves prose alone. Its own table of a
# class's members is off: autodoc's :members: already documents each one, and numpydoc's table
# would link to a page per member that nothing generates (a warning per member).
numpydoc_show_class_members = False

# The search page would fetch() every result page for a snippet, which a browser refuses for a
# site opened from disk (file://): results are listed by title alone, so search works there too.
html_show_search_summary = False
