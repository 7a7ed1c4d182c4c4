"""Programs -> ProgramGraphs (docs/spec/graph.md): :mod:`programl.graph_builder.llvm` builds a graph from LLVM IR (text
or bitcode, read by llvmlite's LLVM 22); :mod:`programl.graph_builder.clang` and ``flang`` compile C, C++, OpenCL, CUDA
and Fortran to IR first; ``xla`` reads XLA HLO. Most code calls :func:`programl.from_llvm_ir` and its siblings
instead."""
