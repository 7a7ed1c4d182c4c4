"""Tests of programl.data.download: mirror first, else a streamed, sha256-checked download (issue 10 item 5)."""

from __future__ import annotations

import hashlib
import http.server
import os
import stat
import threading
import tracemalloc
from pathlib import Path

import pytest

from programl.data import devmap, poj104
from programl.data.download import download_url, fetch, sha256_file
from programl.exceptions import ProgramlError

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture()
def server(tmp_path: Path):
    """A loopback HTTP server over ``tmp_path/www``; yields its base URL."""
    www = tmp_path / "www"
    www.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(www), **kwargs)

        def log_message(self, *args):  # quiet
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield www, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_http_download_is_checked_and_mode_follows_umask(server, tmp_path: Path) -> None:
    www, base = server
    (www / "data.bin").write_bytes(PAYLOAD)
    out = tmp_path / "out"
    old = os.umask(0o022)
    try:
        path = download_url(f"{base}/data.bin", out / "data.bin", _sha(PAYLOAD), timeout=30)
    finally:
        os.umask(old)
    assert path.read_bytes() == PAYLOAD
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert _leftovers(out) == ["data.bin"]


def test_checksum_mismatch_is_one_line_and_leaves_nothing(server, tmp_path: Path) -> None:
    www, base = server
    (www / "data.bin").write_bytes(PAYLOAD)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ProgramlError) as info:
        download_url(f"{base}/data.bin", out / "data.bin", "0" * 64, timeout=30)
    message = str(info.value)
    assert "\n" not in message and "sha256" in message and _sha(PAYLOAD) in message
    assert _leftovers(out) == []  # no partial file, no temporary


def test_missing_url_is_one_line(server, tmp_path: Path) -> None:
    _, base = server
    with pytest.raises(ProgramlError) as info:
        download_url(f"{base}/absent.bin", tmp_path / "x.bin", None, timeout=30)
    assert "\n" not in str(info.value) and "could not download" in str(info.value)
    assert not (tmp_path / "x.bin").exists()


def test_download_streams_in_chunks(tmp_path: Path) -> None:
    """A 16 MiB file:// download with 64 KiB chunks never holds the file in memory."""
    big = tmp_path / "big.bin"
    block = os.urandom(1 << 20)
    with open(big, "wb") as f:
        for _ in range(16):
            f.write(block)
    expected = sha256_file(big)
    tracemalloc.start()
    try:
        download_url(big.as_uri(), tmp_path / "copy.bin", expected, chunk_size=1 << 16)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sha256_file(tmp_path / "copy.bin") == expected
    assert peak < 4 << 20, f"peak Python allocation {peak} bytes for a 16 MiB download"


def test_fetch_prefers_the_mirror_and_checks_it(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "a.bin").write_bytes(PAYLOAD)
    # the URL is wrong on purpose: a mirror hit never touches it
    path = fetch(tmp_path / "raw" / "a.bin", _sha(PAYLOAD), url="file:///nonexistent/a.bin", mirrors=[None, mirror])
    assert path.read_bytes() == PAYLOAD
    assert fetch(path, _sha(PAYLOAD)) == path  # already there: kept, no source needed
    with pytest.raises(ProgramlError, match="sha256 differs"):
        fetch(tmp_path / "raw2" / "a.bin", "1" * 64, mirrors=[mirror])
    assert not (tmp_path / "raw2" / "a.bin").exists()


def test_fetch_takes_a_mirror_that_is_the_file_and_checks_nothing_without_a_digest(tmp_path: Path) -> None:
    """A mirror may name the file itself (``--source poj104.tar.xz``), only under the wanted name; ``sha256=None``
    (a source that is not the published one, ``--no-verify``) is linked or copied unchecked."""
    mirror = tmp_path / "mirror" / "a.bin"
    mirror.parent.mkdir()
    mirror.write_bytes(PAYLOAD)
    assert fetch(tmp_path / "raw" / "a.bin", _sha(PAYLOAD), mirrors=[mirror]).read_bytes() == PAYLOAD
    with pytest.raises(ProgramlError, match="no public URL"):  # another name is not that file
        fetch(tmp_path / "raw" / "b.bin", _sha(PAYLOAD), mirrors=[mirror])
    unchecked = fetch(tmp_path / "raw2" / "a.bin", None, mirrors=[mirror])
    assert unchecked.read_bytes() == PAYLOAD and fetch(unchecked, None) == unchecked
    with pytest.raises(ProgramlError, match="sha256 differs"):  # a digest is still checked when given
        fetch(tmp_path / "raw3" / "a.bin", "1" * 64, mirrors=[mirror])


def test_poj104_programs_come_from_a_codexglue_mirror_by_link(tmp_path: Path) -> None:
    """A mirror that is an extracted ``codexglue/`` (or holds one) is linked as ``raw/codexglue``, not copied; an
    archive that is not the published one is taken only with ``verify=False``."""
    programs = tmp_path / "src" / "codexglue"
    (programs / "1").mkdir(parents=True)
    (programs / "1" / "1.cpp").write_text("int main() { return 0; }\n")
    for mirror in (programs, programs.parent):
        raw = tmp_path / f"raw-{mirror.name}"
        found = poj104.fetch_poj104(raw, url="file:///nonexistent", mirrors=[None, mirror])
        assert found == raw / "codexglue" and found.is_symlink() and found.resolve() == programs.resolve()
        assert [p.id for p in poj104.read_programs(found, verify=False)] == ["1.1"]
        assert poj104.fetch_poj104(raw, url="file:///nonexistent") == found  # there now: kept
    other = tmp_path / "other"
    other.mkdir()
    (other / poj104.ARCHIVE).write_bytes(b"not the published archive")
    with pytest.raises(ProgramlError, match="sha256 differs"):
        poj104.fetch_poj104(tmp_path / "raw-checked", mirrors=[other])
    unchecked = poj104.fetch_poj104(tmp_path / "raw-unchecked", mirrors=[other], verify=False)
    assert unchecked.read_bytes() == b"not the published archive"


def test_fetch_falls_back_to_the_url(tmp_path: Path) -> None:
    source = tmp_path / "published.bin"
    source.write_bytes(PAYLOAD)
    path = fetch(tmp_path / "raw" / "published.bin", _sha(PAYLOAD), url=source.as_uri(), mirrors=[tmp_path / "no"])
    assert path.read_bytes() == PAYLOAD
    with pytest.raises(ProgramlError, match="no public URL"):
        fetch(tmp_path / "raw" / "other.bin", _sha(PAYLOAD), mirrors=[tmp_path / "no"])


def test_devmap_sources_come_from_the_shared_mirror(shared_data: Path, tmp_path: Path) -> None:
    found = devmap.fetch_sources(tmp_path / "raw", mirrors=[shared_data / "devmap"])
    assert sorted(found) == sorted(devmap.SOURCES)
    for name, path in found.items():
        assert sha256_file(path) == devmap.SOURCES[name].sha256


def test_poj104_archive_comes_from_the_shared_mirror(shared_data: Path, tmp_path: Path) -> None:
    path = poj104.fetch_poj104(tmp_path / "raw", mirrors=[shared_data / "poj104"])
    assert path.name == poj104.ARCHIVE and sha256_file(path) == poj104.ARCHIVE_SHA256
    legacy = poj104.fetch_legacy(tmp_path / "raw", mirrors=[shared_data / "legacy-ir"])
    assert sha256_file(legacy) == poj104.LEGACY_SHA256


def test_poj104_repository_download_is_checked_and_cleaned_up(tmp_path: Path) -> None:
    """Without a mirror the repository archive is streamed from its URL and its codexglue/ checked; one that is not
    the published POJ-104 is refused, and nothing is left behind."""
    import tarfile

    tree = tmp_path / "repo" / "dataset-poj-104-28790c70" / "codexglue" / "1"
    tree.mkdir(parents=True)
    (tree / "1.cpp").write_text("int main() { return 0; }\n")
    archive = tmp_path / "repo.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "repo" / "dataset-poj-104-28790c70", arcname="dataset-poj-104-28790c70")
    out = tmp_path / "raw"
    with pytest.raises(ProgramlError) as info:
        poj104.fetch_poj104(out, url=archive.as_uri(), mirrors=[tmp_path / "no-mirror"])
    assert "\n" not in str(info.value) and "differ from the published POJ-104" in str(info.value)
    assert _leftovers(out) == []
    with pytest.raises(ProgramlError, match="could not download"):
        poj104.fetch_poj104(out, url=(tmp_path / "absent.tar.gz").as_uri())
    assert _leftovers(out) == []
