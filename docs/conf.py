"""Sphinx configuration of the programl documentation site (``make docs``; tests/docs builds it with ``-W``).

Sphinx, because the libraries our users know (PyTorch, torch_geometric, networkx) are documented with it: autodoc +
napoleon read the Google-style docstrings the code already has (DESIGN §6), MyST reads the Markdown pages this
repository already keeps in ``docs/`` (they are pages of the site, not copies), sphinx-gallery runs the tutorials at
build time (as networkx's and PyTorch's tutorials are run: a broken example fails the build), and the CLI reference
is generated from the argparse parsers themselves (``_ext/programl_cli.py``). The build is offline: no intersphinx,
no fonts or scripts from the network.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

import programl  # noqa: E402

project = "programl"
author = "the programl authors"
copyright = "the programl authors; ProGraML by Cummins et al. (Apache-2.0)"
version = release = programl.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "programl_cli",
    "programl_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "tutorials/GALLERY_HEADER.rst", "**/sg_execution_times.rst"]
# The Markdown pages are also read on GitHub, whose anchors (`#the-headings-slug`) they use.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "dollarmath"]
suppress_warnings = [
    "myst.header",  # the Markdown pages were written for GitHub, which allows a heading level to be skipped
]

# ---- API reference (autodoc + napoleon: Google style, DESIGN §6)
# undoc-members: a public name without a docstring is listed (and reported by _ext/programl_docs.py), never dropped
autodoc_default_options = {"members": True, "undoc-members": True, "member-order": "bysource", "show-inheritance": True}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_mock_imports: list[str] = []
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = True
napoleon_use_ivar = (
    True  # an "Attributes:" section is a field list, so fields autodoc lists too are not described twice
)
autoclass_content = "class"

# ---- tutorials: executed at build time; an example that raises fails the build
sphinx_gallery_conf = {
    "examples_dirs": str(DOCS / "tutorials"),
    "gallery_dirs": str(DOCS / "auto_tutorials"),
    "filename_pattern": r"/tutorial_",
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "image_scrapers": ("matplotlib",),  # the figures a tutorial draws (tutorial 5: reward against steps)
    "plot_gallery": "True",
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "show_signature": False,
    "write_computation_times": False,
    "min_reported_time": 3600,
}

# ---- HTML
html_theme = "furo"
html_title = f"programl {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None

# Literal blocks without a language (tables of numbers, terminal output) are shown as they are, not lexed as Python.
highlight_language = "none"
