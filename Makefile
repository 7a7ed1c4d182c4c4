# Every target bootstraps what it needs: the virtualenv (.venv), pip packages, and the Debian packages
# (clang-22; graphviz and flang-22, optional; clang-14 and libtinfo5 for the reference binary) where they are missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-done
REF_VENV ?= .venv-ref
REF_BIN := $(REF_VENV)/lib/python3.11/site-packages/programl/bin/llvm2graph-10
PYTEST_ARGS ?=
# Test processes (pytest-xdist): the 2-core CI machine runs two; `make test TEST_WORKERS=8` on a larger one.
TEST_WORKERS ?= 2

.PHONY: setup toolchain reference demo test test-all test-studies docs bench proto clean help

help:
	@echo "make demo   - set everything up, build graphs for examples/, print a summary, write an SVG, and run a pretrained model on one"
	@echo "make test   - set everything up and run the test suite (CI; the slow end-to-end tests are left out)"
	@echo "make test-all - the same with the slow end-to-end tests (pytest -m slow: about 10 more CPU-minutes)"
	@echo "make test-studies - the tests of the studies in studies/ (not part of make test)"
	@echo "make docs   - build the documentation site into docs/_build/html (offline; warnings are errors)"
	@echo "make bench  - run the benchmarks in benchmarks/"
	@echo "make proto  - regenerate programl/proto/*_pb2.py and programl/third_party/tensorflow/xla_pb2.py"

setup: $(STAMP) toolchain

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[ml,cluster,dev,xla,docs,gym]'
	@touch $@

toolchain:
	@scripts/ensure-apt.sh clang-22
	@scripts/ensure-apt.sh --optional graphviz flang-22
	@# a headless browser for tests/view (programl view pages); they skip without it
	@scripts/ensure-apt.sh --optional chromium chromium-driver

# The original ProGraML 0.3.2 (for differential tests only; never imported): its llvm2graph-10 binary needs
# libtinfo5, and clang-14 makes LLVM 10-readable IR. Optional: tests that need it skip when this fails.
reference: $(REF_BIN)
$(REF_BIN):
	@scripts/ensure-apt.sh --optional libtinfo5 clang-14
	@test -x $(REF_VENV)/bin/python || $(PYTHON) -m venv $(REF_VENV)
	@$(REF_VENV)/bin/python -m pip install -q --no-deps programl==0.3.2 \
	  || echo "reference: could not install programl==0.3.2; differential tests will skip" >&2

demo: setup
	$(BIN)/programl build examples/*.ll examples/*.c examples/*.cc examples/*.cl -o out/demo
	$(BIN)/programl stats out/demo/*.ProgramGraph.pb
	@if command -v dot >/dev/null; then \
	  $(BIN)/programl convert out/demo/fizzbuzz.ProgramGraph.pb --format svg -o out/demo -q && \
	  echo "demo: graphs in out/demo/, a picture of fizzbuzz.c in out/demo/fizzbuzz.svg"; \
	else echo "demo: graphs in out/demo/ (install graphviz for the picture: apt-get install graphviz)"; fi
	$(BIN)/programl predict dataflow examples/fizzbuzz.c --analysis reachability --roots 1 --compare
	@echo "demo: the bundled reachability model's prediction for one root of fizzbuzz.c, beside the exact analysis"

test: setup reference
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not slow" --durations=20 $(PYTEST_ARGS)

test-all: setup reference
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --durations=20 $(PYTEST_ARGS)

# The studies (studies/README.md) keep their scripts running: their tests, outside testpaths, so make test skips them.
test-studies: setup reference
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --durations=20 $(PYTEST_ARGS) studies/tests

# The site (docs/conf.py): Sphinx + MyST + sphinx-gallery (the tutorials run), offline. tests/docs builds it too.
docs: setup
	$(BIN)/python -m sphinx -b html -W --keep-going -q docs docs/_build/html -d docs/_build/doctrees
	@echo "docs: open docs/_build/html/index.html"

bench: setup reference
	$(BIN)/python benchmarks/build.py
	$(BIN)/python benchmarks/dataflow.py
	$(BIN)/python benchmarks/differential.py
	$(BIN)/python benchmarks/train.py --batches 5

proto:
	@test -x .venv-protoc/bin/python || ($(PYTHON) -m venv .venv-protoc && .venv-protoc/bin/pip install -q grpcio-tools==1.71.0)
	.venv-protoc/bin/python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. programl/proto/*.proto \
	  programl/third_party/tensorflow/xla.proto

clean:
	rm -rf out build *.egg-info .pytest_cache bench-results docs/_build docs/auto_tutorials docs/sg_execution_times.rst
