"""Write the HLO fixtures of tests/graph_builder/test_xla.py: ``<name>.hlo.pb``, each a serialized ``xla.HloProto``.

Each is a small jax function lowered on CPU (``jax.jit(f).lower(...).compiler_ir("hlo")``), its ``HloModuleProto``
wrapped in an ``HloProto`` as XLA's ``--xla_dump_hlo_as_proto`` writes it. Source locations keep only the file
name (no directories of the machine that made them). The tests read these files without jax; with jax installed
they also build the same functions afresh (``FUNCTIONS``).

    .venv/bin/python tests/data/xla/make_fixtures.py          # needs: pip install 'programl[xla]'
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _functions():
    import jax
    import jax.numpy as jnp

    def elementwise(x, y):
        return jnp.tanh(x) * y + 1.0

    def dot(a, b):
        return jnp.dot(a, b)

    def while_loop(x):
        return jax.lax.fori_loop(0, 10, lambda i, v: v * 2.0 + i, x)

    def conditional(p, x):
        return jax.lax.cond(p > 0, lambda v: jnp.sin(v), lambda v: jnp.cos(v), x)

    def reduce(x):
        return jnp.sum(x, axis=1), jnp.max(x)

    f32 = jnp.float32
    return {
        "elementwise": (elementwise, (jnp.ones((3,), f32), jnp.ones((3,), f32))),
        "dot": (dot, (jnp.ones((2, 3), f32), jnp.ones((3, 4), f32))),
        "while_loop": (while_loop, (jnp.ones((4,), f32),)),
        "conditional": (conditional, (jnp.int32(1), jnp.ones((2,), f32))),
        "reduce": (reduce, (jnp.ones((2, 5), f32),)),
    }


def hlo_proto_bytes(function, args) -> bytes:
    """The serialized ``HloProto`` of ``jax.jit(function)`` lowered for ``args`` on CPU."""
    import jax

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_hlo_source_file_canonicalization_regex", ".*/")
    module = jax.jit(function).lower(*args).compiler_ir("hlo").as_serialized_hlo_module_proto()
    # HloProto { hlo_module = 1 }: wrap the module's bytes as they are (fields newer than the 2019 schema included)
    from programl.graph_builder._encode import varint

    return b"\x0a" + varint(len(module)) + module


def functions() -> dict:
    """name -> (function, example arguments) for each fixture."""
    return _functions()


def main() -> int:
    for name, (function, args) in functions().items():
        path = HERE / f"{name}.hlo.pb"
        path.write_bytes(hlo_proto_bytes(function, args))
        print(f"{path.name}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[2]))
    sys.exit(main())
