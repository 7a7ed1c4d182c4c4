"""The learned policy: a GGNN reads a benchmark's ProGraML graph and picks a pass pipeline in one shot; and the
search it guides (docs/gym.md#the-learned-policy).

The policy chooses among a fixed list of pipelines (``policy.pipelines``: LLVM's ``default<Oz>`` first, then
pipelines that searches found on training programs): :class:`~programl.models.GGNNGraphClassifier` reads the graph
of the benchmark as loaded (``ProgramlGraph``) with its ``Autophase`` features as the auxiliary input, and gives one
score per pipeline. It was trained by imitation: each training program's label is the set of pipelines that reach
its smallest instruction count (``studies/gym_policy.py``; its model card says how it was trained and what it
scores).

* :meth:`Policy.optimize`: one shot: the best-scored pipeline, run once by ``opt-22`` (no search).
* :func:`guided_search`: the policy's ``top_k`` pipelines and ``default<Oz>``, then greedy steps from the best of
  them: each step tries appending every pipeline of the list and each pass the policy names
  (``policy.refine_actions``), then every action, and keeps the best, until nothing helps or time is up.

A policy is a directory (:func:`load_policy`; the one shipped is :data:`DEFAULT_POLICY` in :data:`POLICY_DIR`):

* ``policy.json``: ``format`` (1), ``name``, ``model`` (``{"class": "GGNNGraphClassifier", "args": [vocabulary
  size, number of pipelines], "kwargs": {...}}``), ``pipelines``, ``refine_actions`` (actions by their pipeline
  elements), ``vocabulary`` and ``weights`` (``{"file", "sha256", "bytes"}``), and records for people (``scores``,
  ``training``);
* ``weights.pt``: the network's ``state_dict``, read with :func:`programl.util.safe_torch.load_tensors` (tensors
  only: nothing is unpickled);
* ``vocab.csv``: the node texts the network embeds (:class:`~programl.data.vocabulary.Vocabulary`);
* ``MODEL_CARD.md``.

A policy directory may come from anyone: every field read is checked (a model other than a
``GGNNGraphClassifier``, sizes out of range, and a pipeline with any element other than ``default<O0|O1|O2|O3|Os|Oz>``
or an action's own element are refused, so that a received policy cannot make ``opt-22`` run a pass that writes
files), each file is read only when it is a regular file of the size ``policy.json`` records, and its sha256 must be
the one recorded. Each failure is one line, a :class:`PolicyError`.

Needs the ``ml`` extra (torch, torch-geometric).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from programl.exceptions import ProgramlError
from programl.gym.actions import ACTIONS
from programl.gym.agents import SearchResult, run_pipeline, score_state
from programl.gym.env import LlvmEnv
from programl.gym.errors import GymError, PassError
from programl.gym.features import AUTOPHASE_FEATURE_NAMES
from programl.gym.state import State, apply_pipeline
from programl.util.fs import atomic_write_bytes, atomic_write_text, read_json, read_regular_file

__all__ = [
    "DEFAULT_POLICY",
    "FORMAT",
    "POLICY_DIR",
    "Policy",
    "PolicyError",
    "check_pipeline",
    "guided_search",
    "load_policy",
    "save_policy",
]

#: Version of the ``policy.json`` layout this module reads and writes.
FORMAT = 1
#: Where the shipped policies live (one folder each).
POLICY_DIR = Path(__file__).resolve().parent / "weights"
#: The policy :func:`load_policy` loads when none is named.
DEFAULT_POLICY = "llvm-ic-policy"
METADATA_FILE = "policy.json"
#: The largest weights and vocabulary files read (bytes): generous for this network, far below memory.
MAX_WEIGHTS_BYTES = 256 << 20
MAX_VOCABULARY_BYTES = 16 << 20
#: The most pipelines a policy may choose among, and the longest pipeline (in elements).
MAX_PIPELINES = 256
MAX_PIPELINE_ELEMENTS = 200
#: The pipelines of LLVM's optimisation levels a policy's pipeline may hold as elements.
LEVELS = tuple(f"default<{level}>" for level in ("O0", "O1", "O2", "O3", "Os", "Oz"))
_ACTION_ELEMENTS = {action.pipeline: i for i, action in enumerate(ACTIONS)}
_ELEMENTS = frozenset(LEVELS) | frozenset(_ACTION_ELEMENTS)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
# the network's keyword arguments a policy may set, and each one's check: (kind, low, high)
_KWARGS = {
    "hidden_channels": ("int", 1, 1024),
    "layer_timesteps": ("ints", 1, 16),
    "use_positions": ("bool", 0, 0),
    "backward_edges": ("bool", 0, 0),
    "dropout": ("float", 0.0, 1.0),
    "message_dropout": ("float", 0.0, 1.0),
    "aux_channels": ("int", len(AUTOPHASE_FEATURE_NAMES), len(AUTOPHASE_FEATURE_NAMES)),
    "aux_hidden": ("int", 1, 1024),
    "aux_dropout": ("float", 0.0, 1.0),
    "log1p_aux": ("bool", 0, 0),
    "max_position": ("int", 1, 65_536),
}


class PolicyError(GymError):
    """A policy directory cannot be used: missing, damaged, or holding something this module refuses (one line
    naming the file)."""


def split_pipeline(text: str) -> list[str]:
    """The top-level elements of an ``opt -passes=`` pipeline (commas inside ``(...)`` and ``<...>`` do not split).

    Raises:
        PolicyError: Unbalanced brackets.
    """
    elements, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "(<":
            depth += 1
        elif char in ")>":
            depth -= 1
            if depth < 0:
                raise PolicyError(f"pipeline {text[:200]!r}: unbalanced brackets")
        elif char == "," and depth == 0:
            elements.append(text[start:i])
            start = i + 1
    if depth:
        raise PolicyError(f"pipeline {text[:200]!r}: unbalanced brackets")
    elements.append(text[start:])
    return elements


def check_pipeline(text: Any, where: str = "pipeline") -> str:
    """``text`` when it is a pipeline a policy may run: elements that are LLVM's levels (:data:`LEVELS`) or the
    actions' own elements, at most :data:`MAX_PIPELINE_ELEMENTS` of them.

    Raises:
        PolicyError: Anything else (one line naming ``where`` and the first element refused).
    """
    if not isinstance(text, str) or not text or len(text) > 100_000:
        raise PolicyError(f"{where}: must be a non-empty pipeline string, not {str(text)[:80]!r}")
    elements = split_pipeline(text)
    if len(elements) > MAX_PIPELINE_ELEMENTS:
        raise PolicyError(f"{where}: {len(elements):,} elements (at most {MAX_PIPELINE_ELEMENTS})")
    for element in elements:
        if element not in _ELEMENTS:
            raise PolicyError(
                f"{where}: {element[:80]!r} is neither an LLVM level (default<Oz> ...) nor an action's pipeline "
                "element; refusing to run it"
            )
    return text


@dataclass
class Policy:
    """A loaded policy (module docstring).

    Attributes:
        name: Its name (its folder's).
        directory: Where it was loaded from.
        metadata: Its checked ``policy.json``.
        model: The network, in eval mode.
        vocabulary: The node texts it embeds.
        pipelines: What it chooses among (``opt-22 -passes=`` text).
        refine_actions: The actions :func:`guided_search` tries first after the pipelines.
    """

    name: str
    directory: Path
    metadata: dict[str, Any]
    model: Any
    vocabulary: Any
    pipelines: list[str]
    refine_actions: list[int] = field(default_factory=list)

    def scores(self, env: LlvmEnv) -> np.ndarray:
        """The probability the network gives each pipeline for the environment's benchmark (reset first); read from
        the benchmark as loaded, whatever the episode has done since.

        Raises:
            ObservationError: The graph or the features cannot be computed.
        """
        import torch

        from programl.io.pyg import to_pyg

        observer, benchmark = env._observer, env.benchmark
        if benchmark is None:
            raise GymError("call reset() before asking the policy")
        initial = observer.initial_state(benchmark)
        data = to_pyg(observer.observe("ProgramlGraph", initial, benchmark), self.vocabulary)
        autophase = observer.observe("Autophase", initial, benchmark)
        data.graph_x = torch.as_tensor(np.asarray(autophase, dtype=np.float32)).view(1, -1)
        with torch.no_grad():
            logits = self.model(data).logits[0]
        return torch.softmax(logits.double(), dim=0).numpy()

    def rank(self, env: LlvmEnv) -> list[int]:
        """The pipelines' indices, best-scored first (ties: the earlier pipeline first)."""
        scores = self.scores(env)
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))

    def optimize(self, env: LlvmEnv) -> SearchResult:
        """One shot: reset the environment and run the best-scored pipeline once (no search). Should ``opt-22``
        fail on it, the next-best pipeline is run instead.

        Returns:
            The pipeline, the episode reward and cost it reaches, the module (``bitcode``); agent ``policy``.

        Raises:
            PassError: Every pipeline failed (the last failure).
        """
        start = time.perf_counter()
        env.reset()
        failure: PassError | None = None
        for runs, index in enumerate(self.rank(env), start=1):
            try:
                state, reward, cost = run_pipeline(env, self.pipelines[index])
            except PassError as error:
                failure = error
                continue
            return SearchResult(env.benchmark.uri, "policy", [], self.pipelines[index], reward, cost, runs,
                                time.perf_counter() - start, state.bitcode)  # fmt: skip
        raise failure if failure is not None else PolicyError(f"{self.directory}: the policy has no pipelines")


def guided_search(env: LlvmEnv, policy: Policy, top_k: int = 3, max_seconds: float | None = 60.0) -> SearchResult:
    """The search the policy guides (module docstring).

    Args:
        env: The environment, with its benchmark and reward space (reset here).
        policy: The policy.
        top_k: How many of the policy's best-scored pipelines are run first (``default<Oz>`` is run too).
        max_seconds: Stop trying moves after this many seconds (None: when no move helps).

    Returns:
        The best pipeline found (its elements joined by commas: one ``opt-22`` run reproduces it, and the reward and
        cost are those of that one run), agent ``guided``.
    """
    start = time.perf_counter()
    env.reset()
    ranked = policy.rank(env)
    first = [policy.pipelines[i] for i in ranked[: max(1, top_k)]]
    if "default<Oz>" not in first:
        first.append("default<Oz>")
    runs = 0
    best: tuple[float, list[str], State] | None = None
    for pipeline in first:
        runs += 1
        try:
            state, _, cost = run_pipeline(env, pipeline)
        except PassError:
            continue
        if best is None or cost < best[0]:
            best = (cost, [pipeline], state)
    if best is None:  # opt-22 failed on all of them: the benchmark as it is
        initial = env._observer.initial_state(env.benchmark)
        best = (score_state(env, initial)[1], [], initial)
    first_best = best

    def out_of_time() -> bool:
        return max_seconds is not None and time.perf_counter() - start > max_seconds

    preferred = list(dict.fromkeys([*policy.pipelines, *(ACTIONS[a].pipeline for a in policy.refine_actions)]))
    every = preferred + [a.pipeline for a in ACTIONS if a.pipeline not in preferred]
    moves, seen = preferred, {hashlib.sha1(best[2].bitcode).digest()}
    while not out_of_time():
        step: tuple[float, str, State] | None = None
        for move in moves:
            if out_of_time():
                break
            runs += 1
            try:
                bitcode = apply_pipeline(best[2].bitcode, move, env.toolchain, env.benchmark.uri)
            except PassError:
                continue
            digest = hashlib.sha1(bitcode).digest()
            if digest in seen:
                continue
            seen.add(digest)
            state = State(bitcode)
            cost = score_state(env, state)[1]
            if cost < best[0] and (step is None or cost < step[0]):
                step = (cost, move, state)
        if step is not None:
            best = (step[0], [*best[1], step[1]], step[2])
        elif moves is preferred and not out_of_time():
            moves = every  # nothing in the policy's moves helps: try every action
        else:
            break
    return _replayed(env, best, first_best, runs, start)


def _replayed(
    env: LlvmEnv, best: tuple[float, list[str], State], first: tuple[float, list[str], State], runs: int, start: float
) -> SearchResult:
    """The result of a pipeline found step by step, scored as one ``opt-22`` run of it (what a user reruns). Should
    that run fail, or leave more instructions than the best pipeline run first (one run of ``a,b`` can differ from a
    run of ``a`` then one of ``b``), the result is that first pipeline."""
    elements, state = best[1], best[2]
    if len(elements) > 1:
        runs += 1
        try:
            state = run_pipeline(env, ",".join(elements))[0]
        except PassError:
            elements, state = first[1], first[2]
    reward, cost = score_state(env, state)
    if cost > first[0]:
        elements, state = first[1], first[2]
        reward, cost = score_state(env, state)
    return SearchResult(env.benchmark.uri, "guided", [], ",".join(elements), reward, cost, runs,
                        time.perf_counter() - start, state.bitcode)  # fmt: skip


# -- the policy's folder -----------------------------------------------------------------------------------------


def _fail(path: Path, field_name: str, problem: str) -> PolicyError:
    return PolicyError(f"{path}: {field_name} {problem}")


def _shown(value: Any) -> str:
    return repr(value)[:80]


def _check_model(path: Path, spec: Any, vocabulary_entries: int, pipelines: int) -> dict[str, Any]:
    if not isinstance(spec, dict) or spec.get("class") != "GGNNGraphClassifier":
        raise _fail(path, "model", f"must be a GGNNGraphClassifier description, not {_shown(spec)}")
    args, kwargs = spec.get("args"), spec.get("kwargs", {})
    if args != [vocabulary_entries, pipelines]:
        raise _fail(path, "model.args", f"must be [vocabulary entries, pipelines] = "
                    f"[{vocabulary_entries}, {pipelines}], not {_shown(args)}")  # fmt: skip
    if not isinstance(kwargs, dict):
        raise _fail(path, "model.kwargs", f"must be an object, not {_shown(kwargs)}")
    for key, value in kwargs.items():
        if key not in _KWARGS:
            raise _fail(path, "model.kwargs", f"has a key this programl does not accept: {_shown(key)}")
        kind, low, high = _KWARGS[key]
        where = f"model.kwargs.{key}"
        if kind == "bool" and not isinstance(value, bool):
            raise _fail(path, where, f"must be true or false, not {_shown(value)}")
        if kind == "int" and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
            raise _fail(path, where, f"must be an integer {low}..{high}, not {_shown(value)}")
        if kind == "float" and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high
        ):
            raise _fail(path, where, f"must be a number {low}..{high}, not {_shown(value)}")
        if kind == "ints" and (
            not isinstance(value, list)
            or not 1 <= len(value) <= 16
            or not all(isinstance(v, int) and not isinstance(v, bool) and low <= v <= high for v in value)
        ):
            raise _fail(path, where, f"must be a list of 1..16 integers {low}..{high}, not {_shown(value)}")
    if kwargs.get("aux_channels") != len(AUTOPHASE_FEATURE_NAMES):
        raise _fail(path, "model.kwargs.aux_channels", f"must be {len(AUTOPHASE_FEATURE_NAMES)} (Autophase)")
    return {"class": "GGNNGraphClassifier", "args": list(args), "kwargs": dict(kwargs)}


def _check_file(path: Path, metadata: Mapping[str, Any], key: str, cap: int) -> dict[str, Any]:
    entry = metadata.get(key)
    name = entry.get("file") if isinstance(entry, dict) else None
    if not isinstance(name, str) or not name or name != Path(name).name or name in (".", ".."):
        raise _fail(path, key, f'must be {{"file": NAME, "sha256": ..., "bytes": ...}} naming a file beside it, '
                    f"not {_shown(entry)}")  # fmt: skip
    if not isinstance(entry.get("sha256"), str) or not _SHA256.fullmatch(entry["sha256"]):
        raise _fail(path, f"{key}.sha256", "is missing or not a sha256: refusing to load an unchecked file")
    size = entry.get("bytes")
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= cap:
        raise _fail(path, f"{key}.bytes", f"must be an integer 0..{cap:,}, not {_shown(size)}")
    return entry


def _read_checked(directory: Path, entry: Mapping[str, Any], what: str) -> bytes:
    file = directory / entry["file"]
    try:
        data = read_regular_file(file, entry["bytes"], what=what)
    except FileNotFoundError:
        raise PolicyError(f"{file}: no such file") from None
    except ProgramlError as error:
        raise PolicyError(str(error)) from None
    except OSError as error:
        raise PolicyError(f"{file}: cannot read: {error.strerror or error}") from None
    if len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"].lower():
        raise PolicyError(f"{file}: damaged (its size or sha256 is not the one {METADATA_FILE} records)")
    return data


def read_policy_metadata(directory: str | os.PathLike) -> dict[str, Any]:
    """The checked ``policy.json`` of a policy folder (module docstring).

    Raises:
        PolicyError: One line naming the file and the field.
    """
    path = Path(directory) / METADATA_FILE
    if not path.exists():
        raise PolicyError(f"{directory}: not a policy (no {METADATA_FILE})")
    try:
        metadata = read_json(path)
    except ProgramlError as error:
        raise PolicyError(str(error)) from None
    if not isinstance(metadata, dict):
        raise PolicyError(f"{path}: must hold a JSON object")
    if metadata.get("format") != FORMAT:
        raise _fail(path, "format", f"must be {FORMAT} (this programl's), not {_shown(metadata.get('format'))}")
    name = metadata.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _fail(path, "name", f"must be letters, digits, '.', '_' or '-', not {_shown(name)}")
    pipelines = metadata.get("pipelines")
    if not isinstance(pipelines, list) or not 1 <= len(pipelines) <= MAX_PIPELINES:
        raise _fail(path, "pipelines", f"must be a list of 1..{MAX_PIPELINES} pipelines, not {_shown(pipelines)}")
    for i, pipeline in enumerate(pipelines):
        check_pipeline(pipeline, f"{path}: pipelines[{i}]")
    refine = metadata.get("refine_actions", [])
    if not isinstance(refine, list) or len(refine) > len(ACTIONS) or not all(r in _ACTION_ELEMENTS for r in refine):
        raise _fail(path, "refine_actions", f"must be a list of actions' pipeline elements, not {_shown(refine)}")
    vocabulary = _check_file(path, metadata, "vocabulary", MAX_VOCABULARY_BYTES)
    entries = vocabulary.get("entries")
    if isinstance(entries, bool) or not isinstance(entries, int) or not 0 <= entries <= 10_000_000:
        raise _fail(path, "vocabulary.entries", f"must be an integer 0..10,000,000, not {_shown(entries)}")
    _check_file(path, metadata, "weights", MAX_WEIGHTS_BYTES)
    metadata["model"] = _check_model(path, metadata.get("model"), entries, len(pipelines))
    return metadata


def load_policy(directory: str | os.PathLike | None = None) -> Policy:
    """Load a policy folder (default: the shipped :data:`DEFAULT_POLICY`).

    Raises:
        PolicyError: One line: no such policy, a field of ``policy.json`` refused (module docstring), a file that is
            missing, not a regular file, or not of the size and sha256 recorded, weights that are not tensors
            (never unpickled) or do not fit the network.
        ModuleNotFoundError: torch or torch-geometric is not installed (the ``ml`` extra).
    """
    from programl.data.vocabulary import Vocabulary
    from programl.models.build import build_model
    from programl.util.safe_torch import load_tensors

    path = Path(directory) if directory is not None else POLICY_DIR / DEFAULT_POLICY
    metadata = read_policy_metadata(path)
    vocab_file = path / metadata["vocabulary"]["file"]
    try:
        vocabulary = Vocabulary.from_tsv(_read_checked(path, metadata["vocabulary"], "vocabulary").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise PolicyError(f"{vocab_file}: not a vocabulary ({str(error).splitlines()[0][:200]})") from None
    if len(vocabulary) != metadata["vocabulary"]["entries"]:
        raise PolicyError(f"{vocab_file}: {len(vocabulary):,} texts, and {METADATA_FILE} records "
                          f"{metadata['vocabulary']['entries']:,}")  # fmt: skip
    weights_file = path / metadata["weights"]["file"]
    data = _read_checked(path, metadata["weights"], "weights file")
    try:
        state = load_tensors(data, what="weights file", name=str(weights_file))
        model = build_model(metadata["model"])
        model.load_state_dict(state)
    except ProgramlError as error:
        raise PolicyError(str(error)) from None
    except Exception as error:  # noqa: BLE001 - missing or extra keys, wrong shapes: one line whatever it is
        reason = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise PolicyError(f"{weights_file}: weights that do not fit the network ({reason})") from None
    model.eval()
    refine = [_ACTION_ELEMENTS[element] for element in metadata.get("refine_actions", [])]
    return Policy(path.name, path, metadata, model, vocabulary, list(metadata["pipelines"]), refine)


def save_policy(
    directory: str | os.PathLike,
    *,
    name: str,
    model: Any,
    model_spec: Mapping[str, Any],
    vocabulary: Any,
    pipelines: Sequence[str],
    refine_actions: Sequence[int] = (),
    records: Mapping[str, Any] | None = None,
) -> Path:
    """Write a policy folder that :func:`load_policy` reads (``MODEL_CARD.md`` is the caller's).

    Args:
        directory: The folder (made when missing).
        name: The policy's name.
        model: The trained network.
        model_spec: Its description (``{"class": "GGNNGraphClassifier", "args": [...], "kwargs": {...}}``).
        vocabulary: Its :class:`~programl.data.vocabulary.Vocabulary`.
        pipelines: What it chooses among, in its output order.
        refine_actions: Action indices for :func:`guided_search`.
        records: Further entries of ``policy.json`` for people (``scores``, ``training`` ...).

    Returns:
        The folder.
    """
    import torch

    for i, pipeline in enumerate(pipelines):
        check_pipeline(pipeline, f"pipelines[{i}]")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, buffer)
    weights = buffer.getvalue()
    vocab = vocabulary.to_tsv().encode("utf-8")
    atomic_write_bytes(directory / "weights.pt", weights)
    atomic_write_bytes(directory / "vocab.csv", vocab)
    metadata = {
        "format": FORMAT,
        "name": name,
        "model": dict(model_spec),
        "inputs": {"graph": "ProgramlGraph of the benchmark as loaded", "aux": "Autophase of the same"},
        "pipelines": list(pipelines),
        "refine_actions": [ACTIONS[a].pipeline for a in refine_actions],
        "vocabulary": {
            "file": "vocab.csv",
            "sha256": hashlib.sha256(vocab).hexdigest(),
            "bytes": len(vocab),
            "entries": len(vocabulary),
        },  # fmt: skip
        "weights": {"file": "weights.pt", "sha256": hashlib.sha256(weights).hexdigest(), "bytes": len(weights)},
        **dict(records or {}),
    }
    atomic_write_text(directory / METADATA_FILE, json.dumps(metadata, indent=2, sort_keys=False) + "\n")
    return directory
