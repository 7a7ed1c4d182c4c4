"""XLA's HLO protocol buffer schema (``xla.proto``, from TensorFlow; Apache-2.0), as ProGraML 0.3.2 vendored it.

``xla_pb2`` is generated from ``xla.proto`` beside this file (``make proto``); its descriptor is byte-identical to
the one in programl 0.3.2's ``programl/third_party/tensorflow/xla_pb2.py``, so HloProto files read the same by both
(docs/spec/graph.md#xla-hlo-graphs). Provenance and licence: ``README.md`` and ``LICENSE`` in this directory.
"""
