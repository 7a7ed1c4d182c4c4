"""Code vendored from other projects, each with its licence and provenance beside it (see ``tensorflow/README.md``).

Kept where programl 0.3.2 kept it, so that ``from programl.third_party.tensorflow import xla_pb2`` works as there.
"""
