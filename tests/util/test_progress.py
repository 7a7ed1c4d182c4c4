"""programl.util.progress: the one progress helper (issue 10 item 5)."""

from __future__ import annotations

import io
import subprocess
import sys

from programl.util import progress as progress_module
from programl.util.progress import is_terminal, message, progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert list(progress(range(5), 5, "work")) == [0, 1, 2, 3, 4]
    assert err.getvalue() == ""


def test_bar_on_a_terminal_unless_disabled_or_below_min_total(monkeypatch) -> None:
    err = _Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    assert list(progress(range(3), 3, "work", unit="file")) == [0, 1, 2]
    assert "work" in err.getvalue() and "\r" in err.getvalue()
    for kwargs in ({"enabled": False}, {"min_total": 4}):
        err.seek(0)
        err.truncate()
        assert list(progress(range(3), 3, "work", **kwargs)) == [0, 1, 2]
        assert err.getvalue() == "", kwargs


def test_is_terminal_of_odd_streams() -> None:
    closed = io.StringIO()
    closed.close()
    assert not is_terminal(closed) and not is_terminal(object()) and is_terminal(_Terminal())


def test_message_prints_one_line_or_nothing(monkeypatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    message("hello")
    message("hidden", enabled=False)
    assert err.getvalue() == "hello\n"


def test_import_loads_neither_torch_nor_tqdm() -> None:
    code = f"import sys, {progress_module.__name__}; print(sorted(m for m in ('torch', 'tqdm') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
