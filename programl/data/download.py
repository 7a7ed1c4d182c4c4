"""The one download helper of the data sets: local copy first, else a URL, always sha256-checked
(docs/spec/datasets.md#other-data-sets; docs/spec/datasets.md#builds).

Every public input file of a data set (devmap's CSVs and zips, POJ-104's archive, the legacy IR) is fetched by
:func:`fetch`:

1. a file already at the destination with the expected sha256 is kept;
2. else the first *mirror* directory that holds a file of that name (the research data beside a checkout,
   ``$PROGRAML_SHARED_DATA/<data set>`` or ``../shared/data/<data set>``, see :func:`shared_data`), or a mirror that
   is that file, is linked (a hard link where the file system allows it) or copied, after its checksum is checked;
3. else the public URL is downloaded by :func:`download_url`.

:func:`download_url` streams: the response is copied in chunks to a temporary file beside the destination while its
sha256 is computed incrementally, so an archive is never held in memory. The temporary file is renamed into place
only when the checksum matches; on any failure (network, checksum, disk) it is removed, nothing is left at the
destination, and the error is one :class:`~programl.exceptions.ProgramlError` line. ``file://`` URLs work too (and
are what the tests use: the machine that runs them has no internet), but only for a regular file: a device
(``file:///dev/zero``), a FIFO or a directory is refused. Other schemes (``ftp:``, ``data:``) are refused, and so is
a redirect to one. A download stops at ``max_bytes`` (default :data:`MAX_DOWNLOAD_BYTES`): a response that says or
turns out to be larger is refused in one line, before or as soon as the cap is passed, and nothing is kept. Files get
the mode ``0o666 & ~umask``, like any file a program writes.

Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlparse

from programl.exceptions import ProgramlError
from programl.util.fs import current_umask, sha256_file

__all__ = ["CHUNK_SIZE", "MAX_DOWNLOAD_BYTES", "URL_SCHEMES", "download_url", "fetch", "sha256_file", "shared_data"]

#: Bytes read and hashed at a time.
CHUNK_SIZE = 1 << 20
#: The most bytes one download may have (the largest public file a data set of programl downloads, scipy's sdist,
#: has 57 MB): a URL that serves more, such as an endless stream, is refused instead of filling the disk.
MAX_DOWNLOAD_BYTES = 2 << 30
#: The URL schemes :func:`download_url` reads (``file`` only for a regular file).
URL_SCHEMES = ("http", "https", "file")


def shared_data(name: str) -> Path | None:
    """``$PROGRAML_SHARED_DATA/<name>`` or ``../shared/data/<name>`` (the research data beside a checkout), if there."""
    shared = os.environ.get("PROGRAML_SHARED_DATA")
    for candidate in ([Path(shared) / name] if shared else []) + [Path("..") / "shared" / "data" / name]:
        if candidate.exists():
            return candidate.resolve()
    return None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _stream_to(path: Path, chunks: Iterable[bytes], sha256: str | None, what: str) -> Path:
    """Write ``chunks`` to a temporary file beside ``path``, hashing as it goes; rename it into place when the hash
    is ``sha256`` (or when no hash is expected). Nothing is left at ``path`` or beside it on failure."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                digest.update(chunk)
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), 0o666 & ~current_umask())
        actual = digest.hexdigest()
        if sha256 is not None and actual != sha256:
            raise ProgramlError(f"{what}: sha256 {actual} differs from the expected {sha256}")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


class _HttpRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to another http(s) URL (never to ``file:``, ``ftp:`` or ``data:``)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urlparse(newurl).scheme.lower() not in ("http", "https"):
            raise ProgramlError(f"could not download {req.full_url}: redirected to {newurl}, not an http(s) URL")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _too_large(url: str, max_bytes: int) -> ProgramlError:
    return ProgramlError(f"could not download {url}: it has more than {max_bytes:,} bytes, the most allowed (refused)")


def _open_local(url: str) -> int:
    """A read-only descriptor of the regular file a ``file://`` URL names (never a device, FIFO or folder)."""
    parsed = urlparse(url)
    if parsed.netloc not in ("", "localhost"):
        raise ProgramlError(f"could not download {url}: a file:// URL names a file of this machine")
    fd = os.open(urllib.request.url2pathname(parsed.path), os.O_RDONLY | os.O_NONBLOCK)  # a FIFO does not block
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ProgramlError(f"could not download {url}: not a regular file (a device, FIFO or folder is never read)")
    return fd


def download_url(
    url: str,
    path: str | os.PathLike,
    sha256: str | None = None,
    *,
    timeout: float = 120,
    chunk_size: int = CHUNK_SIZE,
    max_bytes: int = MAX_DOWNLOAD_BYTES,
) -> Path:
    """Stream ``url`` to ``path`` (atomically), checking its sha256 on the way (module docstring).

    Args:
        url: ``https://``, ``http://`` or ``file://`` (a regular file).
        path: Destination file.
        sha256: Expected hex digest (None: not checked).
        timeout: Seconds without progress before the connection is given up.
        chunk_size: Bytes per read.
        max_bytes: The most bytes the download may have (a larger one is refused and nothing is kept).

    Raises:
        ProgramlError: The URL's scheme is not one of :data:`URL_SCHEMES`, a ``file://`` URL names no regular file,
            the download is larger than ``max_bytes``, failed, or the checksum differs (one line; nothing is
            written then).
    """
    path = Path(path)
    scheme = urlparse(url).scheme.lower()
    if scheme not in URL_SCHEMES:
        raise ProgramlError(f"could not download {url}: only {', '.join(URL_SCHEMES)} URLs are read")

    def limited(read) -> Iterable[bytes]:
        total = 0
        for chunk in iter(lambda: read(chunk_size), b""):
            total += len(chunk)
            if total > max_bytes:
                raise _too_large(url, max_bytes)
            yield chunk

    def chunks() -> Iterable[bytes]:
        if scheme == "file":
            with os.fdopen(_open_local(url), "rb") as f:
                yield from limited(f.read)
            return
        opener = urllib.request.build_opener(_HttpRedirects)
        with opener.open(url, timeout=timeout) as response:  # noqa: S310 - http(s) only, checked above
            length = response.headers.get("Content-Length")
            if length and length.strip().isdigit() and int(length) > max_bytes:
                raise _too_large(url, max_bytes)
            yield from limited(response.read)

    try:
        return _stream_to(path, chunks(), sha256, url)
    except ProgramlError:
        raise
    except (OSError, ValueError, urllib.error.URLError) as error:
        reason = getattr(error, "reason", None)
        message = _first_line(reason) if isinstance(reason, BaseException) else _first_line(error)
        raise ProgramlError(f"could not download {url}: {message}") from None


def _copy_chunks(source: Path) -> Iterable[bytes]:
    with open(source, "rb") as f:
        yield from iter(lambda: f.read(CHUNK_SIZE), b"")


def fetch(
    path: str | os.PathLike,
    sha256: str | None,
    *,
    url: str | None = None,
    mirrors: Iterable[str | os.PathLike | None] = (),
    timeout: float = 120,
    max_bytes: int = MAX_DOWNLOAD_BYTES,
) -> Path:
    """Make ``path`` hold the file with digest ``sha256``: kept, linked or copied from a mirror, or downloaded.

    Args:
        path: Destination file; its name is looked up in each mirror directory.
        sha256: Expected hex digest (None: not checked; a file that is not the published one, for tests).
        url: Public URL to download when no mirror has the file (None: mirrors only).
        mirrors: Directories to take the file from first, or the file itself under its own name (None entries are
            skipped).
        timeout: See :func:`download_url`.
        max_bytes: The most bytes a download from ``url`` may have (:func:`download_url`).

    Raises:
        ProgramlError: A mirror's copy or the download has another checksum, the download failed, or there is no
            source at all (one line; nothing is left at ``path``).
    """
    path = Path(path)
    mirrors = [m for m in mirrors if m is not None]
    if path.is_file() and (sha256 is None or sha256_file(path) == sha256):
        return path
    for mirror in mirrors:
        mirror = Path(mirror)
        source = mirror if mirror.name == path.name and mirror.is_file() else mirror / path.name
        if not source.is_file():
            continue
        if source.resolve() == path.resolve():
            raise ProgramlError(f"{path}: sha256 differs from the expected {sha256}")
        if sha256 is not None and sha256_file(source) != sha256:
            raise ProgramlError(f"{source}: sha256 differs from the expected {sha256}")
        path.parent.mkdir(parents=True, exist_ok=True)
        link = path.parent / f".{path.name}.{os.getpid()}.link"
        try:
            link.unlink(missing_ok=True)
            os.link(source, link)
            os.replace(link, path)
            return path
        except OSError:  # another file system, or links not allowed: a streamed copy
            link.unlink(missing_ok=True)
        try:
            return _stream_to(path, _copy_chunks(source), sha256, str(source))
        except OSError as error:
            raise ProgramlError(f"{path}: could not copy {source}: {_first_line(error)}") from None
    if url is None:
        searched = ", ".join(str(m) for m in mirrors) or "no mirror"
        raise ProgramlError(f"{path}: missing, and not in {searched} (no public URL to download it from)")
    return download_url(url, path, sha256, timeout=timeout, max_bytes=max_bytes)
