"""Profile metadata of LLVM IR (``!prof`` attachments and the ``ProfileSummary`` module flag) as graph features, for
:mod:`programl.graph_builder.llvm_walk` (docs/spec/graph.md#node-fields, docs/spec/graph.md#construction-order step
6)."""

from __future__ import annotations

from programl.graph_builder.ir_text import ModuleText


def _metadata_fields(value: str) -> list[str]:
    """The top-level fields of a metadata tuple ``!{!"name", i32 1, ...}`` (``distinct`` accepted)."""
    value = value.strip()
    if value.startswith("distinct "):
        value = value[len("distinct ") :]
    if not value.startswith("!{") or not value.endswith("}"):
        return []
    return [field.strip() for field in value[2:-1].split(",") if field.strip()]


def _metadata_int(field: str) -> int | None:
    parts = field.split()
    if len(parts) == 2 and parts[0].startswith("i"):
        try:
            return int(parts[1])
        except ValueError:
            return None
    return None


def _profile_features(fields: list[str], opcode: str, text: str) -> list[tuple[str, int]]:
    """``extractProfTotalWeight`` and (for two-way ``br``/``select``) ``extractProfMetadata`` of LLVM 10."""
    if len(fields) < 2:
        return []
    features: list[tuple[str, int]] = []
    kind = fields[0]
    weights = [f for f in fields[1:] if not f.startswith('!"')]  # LLVM 22 may add !"expected"
    if kind == '!"branch_weights"':
        values = [_metadata_int(f) for f in weights]
        if all(v is not None for v in values):
            features.append(("llvm_profile_total_weight", sum(values) & 0xFFFFFFFFFFFFFFFF))
        if opcode in ("br", "select") and len(values) == 2 and all(v is not None for v in values):
            features.append(("llvm_profile_true_weight", values[0]))
            features.append(("llvm_profile_false_weight", values[1]))
    elif kind == '!"VP"' and len(fields) > 3:
        total = _metadata_int(fields[2])
        if total is not None:
            features.append(("llvm_profile_total_weight", total))
    return features


_SUMMARY_KEYS = {
    "NumFunctions": "llvm_profile_num_functions",
    "MaxFunctionCount": "llvm_profile_max_function_count",
    "NumCounts": "llvm_profile_num_counts",
    "TotalCount": "llvm_profile_total_count",
    "MaxCount": "llvm_profile_max_count",
    "MaxInternalCount": "llvm_profile_max_internal_count",
}


def _module_profile_summary(text: ModuleText) -> list[tuple[str, int]]:
    """Module features from a ``ProfileSummary`` module flag, in the reference's order."""
    if not any('!"ProfileSummary"' in line for line in text.metadata_lines):
        return []
    metadata = text.metadata
    summary = None
    for value in metadata.values():
        fields = _metadata_fields(value)
        if len(fields) == 3 and fields[1] == '!"ProfileSummary"':
            summary = fields[2]
    if summary is None:
        return []
    found: dict[str, int] = {}
    for reference in _metadata_fields(metadata.get(summary, "")):
        entry = _metadata_fields(metadata.get(reference, ""))
        if len(entry) == 2 and entry[0].strip('!"') in _SUMMARY_KEYS:
            value = _metadata_int(entry[1])
            if value is not None:
                found[_SUMMARY_KEYS[entry[0].strip('!"')]] = value
    return [(key, found[key]) for key in _SUMMARY_KEYS.values() if key in found]
