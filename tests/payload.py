"""A pickle payload (issue 39): a file that runs code when unpickled, here a harmless one that creates a marker
file. The security tests hand it to every reader of received files and assert that the marker never appears."""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def payload_bytes(marker: Path, kind: str = "torch", around: object = None) -> bytes:
    """A payload that creates ``marker`` when unpickled: ``kind`` ``"torch"`` (torch.save's zip, the payload
    inside ``around``: a dict key ``"model"`` etc.) or ``"pickle"`` (a bare pickle, torch's legacy format)."""
    if kind == "pickle":
        return pickle.dumps(_Payload(marker))
    import torch

    buffer = io.BytesIO()
    obj = _Payload(marker) if around is None else _wrap(around, _Payload(marker))
    torch.save(obj, buffer)
    return buffer.getvalue()


def _wrap(around: object, payload: _Payload) -> object:
    """``around`` with its first ``None`` value (depth-first) replaced by the payload."""
    if isinstance(around, dict):
        out, done = {}, False
        for key, value in around.items():
            if not done and value is None:
                out[key], done = payload, True
            else:
                out[key] = value
        return out
    if isinstance(around, tuple):
        return tuple(payload if v is None else v for v in around)
    return payload


def write_payload(path: Path, marker: Path, kind: str = "torch", around: object = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload_bytes(marker, kind, around))
    return path


def payload_runs(marker: Path) -> bool:
    """Whether the payload in a test would run: unpickling it here must create the marker (a payload that does
    not run proves nothing)."""
    pickle.loads(payload_bytes(marker, "pickle"))
    ran = marker.exists()
    marker.unlink(missing_ok=True)
    return ran
