"""What ``--help`` shows of a docstring (DESIGN §6): plain text, without reStructuredText markup and without
references to the SPEC or DESIGN, documents the installed package does not ship."""

from __future__ import annotations

import re

__all__ = ["description", "help_text"]


def help_text(text: str) -> str:
    """``text`` as ``--help`` shows it: no reStructuredText markup (````x````, ``:mod:`x```) and no references to the
    SPEC or DESIGN (``(SPEC §4, §9.1)``)."""
    text = re.sub(r"\s*\((?:SPEC|DESIGN) §[^)]*\)", "", text)
    text = re.sub(r":\w+:`~?([^`]*)`", lambda m: m.group(1).rsplit(".", 1)[-1], text)
    return text.replace("``", "")


def description(doc: str | None) -> str:
    """The first paragraph of a module docstring ``doc`` as :func:`help_text` gives it: a command's description."""
    return help_text((doc or "").strip().split("\n\n")[0])
