"""What the programl site adds to Sphinx.

* Every public object the API reference documents must have a docstring: autodoc reports one without (a warning, so
  ``-W`` fails the build), which keeps the reference complete as the code grows.
* The page ``view`` embeds a ``programl view`` page: after an HTML build, ``view/fizzbuzz.html`` is written into the
  output, made from ``examples/fizzbuzz.c`` with reachability's exact labels and the bundled model (the exact labels
  only where torch or clang is missing, with a note in the build's log).
"""

from __future__ import annotations

import os
from pathlib import Path

from sphinx.util import logging

__all__ = ["setup"]

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
#: Kinds of object that must say what they are.
DOCUMENTED = {"module", "class", "exception", "function", "method", "property", "data", "decorator"}


def _origin_docs(name: str) -> list[str]:
    """The ``#:`` comment of a module-level name re-exported by a package (``programl.dataflow.ANALYSES`` is
    :mod:`programl.dataflow.names`'s): autodoc reads doc comments from the module it documents, not from the module
    that defines the name."""
    import ast
    import importlib
    import inspect

    from sphinx.pycode import ModuleAnalyzer

    module_name, _, attribute = name.rpartition(".")
    try:
        module = importlib.import_module(module_name)
        tree = ast.parse(inspect.getsource(module))
    except (ImportError, OSError, TypeError, SyntaxError):
        return []
    origins = [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == attribute for a in node.names)
    ]
    origins += [getattr(module, "_EXPORTS", {}).get(attribute)] if hasattr(module, "_EXPORTS") else []
    for origin in filter(None, origins):
        try:
            docs = ModuleAnalyzer.for_module(origin).find_attr_docs()
        except Exception:  # noqa: BLE001 - no source to read: no comment
            continue
        if ("", attribute) in docs:
            return list(docs[("", attribute)])
    return []


def _check_docstring(app, what, name, obj, options, lines) -> None:
    if what == "data":
        # the #: comment where the name is defined; never the docstring of the value's type (a tuple's, a dict's)
        origin = _origin_docs(name)
        type_doc = (type(obj).__doc__ or "").strip().splitlines()
        if origin:
            lines[:] = origin
        elif type_doc and lines and lines[0].strip() == type_doc[0].strip():
            lines[:] = []
    if what not in DOCUMENTED or any(line.strip() for line in lines):
        return
    if name.rsplit(".", 1)[-1].startswith("_"):
        return
    logger.warning("%s %s has no docstring", what, name, type="programl", subtype="docstring")


def write_view_pages(outdir: Path) -> list[Path]:
    """The ``programl view`` pages the site embeds, written under ``outdir/view``."""
    from programl.view import read_input, write_html

    out = outdir / "view"
    graph, locations = read_input(str(ROOT / "examples" / "fizzbuzz.c"))
    try:
        import torch  # noqa: F401

        model = "reachability"
    except ImportError:
        logger.info("programl view: torch is not installed, the embedded page shows the exact labels only")
        model = None
    page = out / "fizzbuzz.html"
    cwd = os.getcwd()
    os.chdir(ROOT)  # the page names its input examples/fizzbuzz.c, as `programl view` run here would
    try:
        write_html(
            str(page), graph, title="examples/fizzbuzz.c", analysis="reachability", model=model, locations=locations
        )
    finally:
        os.chdir(cwd)
    return [page]


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in write_view_pages(Path(app.outdir)):
        logger.info("programl view: wrote %s (%d bytes)", page, page.stat().st_size)


def _skip_foreign(app, what, name, obj, skip, options):
    """Leave out the members of a class that are not written in programl's sources: those inherited from another
    library and those another library generates at run time (torch_geometric adds a ``collect`` to each
    ``MessagePassing`` subclass when the first instance is made, e.g. by a tutorial)."""
    import inspect

    if what not in ("class", "exception") or not callable(obj):
        return None
    try:
        source = inspect.getsourcefile(inspect.unwrap(obj))
    except TypeError:  # a builtin: not ours
        return True
    if source is None or not Path(source).resolve().is_relative_to(ROOT / "programl"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign)
    app.connect("autodoc-process-docstring", _check_docstring)
    app.connect("build-finished", _build_finished)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
