"""The studies: scripts, benchmarks and helpers that answered one question each about the project's models and data
(``studies/README.md`` lists them). Not part of the ``programl`` package; run from the repository root."""
