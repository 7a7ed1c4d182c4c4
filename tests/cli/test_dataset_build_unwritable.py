"""A data set that cannot be written is reported as such: each failed input's line names the data set's file and
the OS's reason, not the input as if it could not be read."""

from __future__ import annotations

from pathlib import Path

import programl.cli as cli

REPO = Path(__file__).resolve().parents[2]


def test_a_file_where_a_folder_of_the_data_set_belongs(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "dataset", "programl.cli.dataset")
    out = tmp_path / "out"
    out.mkdir()
    (out / "labels").write_text("a file, not a folder\n")  # works as root too, unlike a read-only folder
    code = cli.main(["dataset", "build", str(REPO / "examples" / "dot_product.ll"), str(out), "-j", "1"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    first = lines[0]
    assert first.startswith(str(out / "labels")), first
    assert "Not a directory" in first and "(writing the data set) [dot_product]" in first
    assert not any("could not be read" in line or "File exists" in line for line in lines), lines
    assert lines[-1].startswith("programl dataset build: 0 built")
