"""IR2Vec program embeddings of LLVM IR files, cached on disk, one child process per batch (issue 40, item 1).

The ``ir2vec`` wheel (2.1.1, LLVM 16 inside) ends the whole process when it cannot parse a file, so the files are
embedded by a child process (``python ir2vec_embed.py --worker MODE`` reading paths on stdin, one JSON line out per
file, announced before it starts); when the child dies the file it announced is recorded as failed, with the last
lines of the child's stderr as the reason, and a new child goes on with the next file.

Cache: ``<cache_dir>/ir2vec-<version>-<mode>/<sha256 of the file's bytes>.json`` holds ``{"vector": [...]}`` or
``{"error": "..."}``; each is written atomically (temporary file, then ``os.replace``) as soon as it is known, so an
interrupted run resumes where it stopped. Failures are cached too (a parse error does not go away);
``retry_failed=True`` tries them again.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

MODES = {"fa": "Flow-Aware", "sym": "Symbolic"}


def ir2vec_version() -> str:
    """The installed ``ir2vec`` distribution's version (without importing it: importing loads LLVM 16)."""
    from importlib.metadata import version

    return version("ir2vec")


def _atomic_write_json(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_worker(mode: str, paths: Sequence[Path]) -> Iterable[tuple[int, dict | None, str]]:
    """Yield ``(index, result, stderr tail)`` for ``paths``: result ``{"vector": ...}``, or ``None`` where the child
    died on that file; after a death a new child starts at the next file."""
    start = 0
    while start < len(paths):
        with tempfile.TemporaryFile("w+") as stderr:
            child = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--worker", mode],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            child.stdin.write("".join(f"{p}\n" for p in paths[start:]))
            child.stdin.close()
            current = None
            for line in child.stdout:
                message = json.loads(line)
                if "start" in message:
                    current = start + message["start"]
                else:
                    yield current, {"vector": message["vector"]}, ""
                    current = None
            child.wait()
            stderr.seek(0)
            tail = " | ".join(stderr.read().strip().splitlines()[-3:])
        if current is None:
            if child.returncode != 0:  # died between files: nothing to blame, stop rather than loop
                raise RuntimeError(f"ir2vec worker exited with {child.returncode}: {tail}")
            return
        tail = tail.replace(f"{paths[current]}: ", "")  # LLVM names the file twice; the caller knows it
        yield current, None, tail or f"the ir2vec process ended (exit status {child.returncode})"
        start = current + 1


def embed_files(
    paths: Sequence[str | os.PathLike],
    mode: str,
    cache_dir: str | os.PathLike,
    *,
    retry_failed: bool = False,
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """IR2Vec program vectors (level ``p``) of ``paths`` in ``mode`` (``"fa"`` or ``"sym"``).

    Returns ``(vectors, failures)``, both keyed by the path as given; a failure's value is its reason.
    """
    if mode not in MODES:
        raise ValueError(f"unknown IR2Vec mode {mode!r} (expected one of {', '.join(MODES)})")
    store = Path(cache_dir) / f"ir2vec-{ir2vec_version()}-{mode}"
    vectors: dict[str, list[float]] = {}
    failures: dict[str, str] = {}
    todo: dict[str, list[str]] = {}  # digest -> the paths with those bytes
    for p in dict.fromkeys(str(p) for p in paths):
        digest = _digest(Path(p))
        entry = store / f"{digest}.json"
        cached = json.loads(entry.read_text(encoding="utf-8")) if entry.is_file() else None
        if cached is not None and ("vector" in cached or not retry_failed):
            if "vector" in cached:
                vectors[p] = cached["vector"]
            else:
                failures[p] = cached["error"]
        else:
            todo.setdefault(digest, []).append(p)
    digests = list(todo)
    results = _run_worker(mode, [Path(todo[d][0]) for d in digests])
    if progress is not None:
        results = progress(results, len(digests), f"ir2vec {mode}")
    for index, result, reason in results:
        digest = digests[index]
        _atomic_write_json(store / f"{digest}.json", result if result is not None else {"error": reason})
        for p in todo[digest]:
            if result is not None:
                vectors[p] = result["vector"]
            else:
                failures[p] = reason
    return vectors, failures


def _worker(mode: str) -> int:
    """Embed the paths read on stdin; before each, announce its index (the parent blames it if this process dies).

    The messages go to the original stdout; file descriptor 1 is pointed at stderr, because LLVM prints its parse
    errors on stdout (they become the failure's reason)."""
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    import ir2vec

    for i, line in enumerate(sys.stdin):
        print(json.dumps({"start": i}), file=protocol, flush=True)
        vector = ir2vec.initEmbedding(line.rstrip("\n"), mode, "p").getProgramVector()
        print(json.dumps({"vector": list(vector)}), file=protocol, flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.exit(_worker(sys.argv[2]))
    sys.exit(f"usage: {sys.argv[0]} --worker MODE < paths (used by studies/devmap_peers.py)")
