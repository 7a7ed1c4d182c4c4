/* programl's CUDA prelude (docs/spec/python-api.md#creation): what CUDA device code needs from the CUDA SDK's
 * headers, so that clang-22 compiles it with --cuda-device-only -nocudainc -nocudalib on a machine without the SDK.
 * Included with -include by programl.graph_builder.clang for .cu inputs: the execution-space and memory-space
 * attributes, the builtin variables (threadIdx, blockIdx, blockDim, gridDim, warpSize, from clang's own resource
 * headers) and the common atomics and fences mapped to clang builtins. Functions here are static inline: unused ones
 * emit nothing. */
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#include <__clang_cuda_builtin_vars.h>
#define __PROGRAML_ATOMIC(name, builtin, T) \
  static __device__ __inline__ T name(T *address, T value) { return builtin(address, value, __ATOMIC_RELAXED); }
__PROGRAML_ATOMIC(atomicAdd, __atomic_fetch_add, int)
__PROGRAML_ATOMIC(atomicAdd, __atomic_fetch_add, unsigned int)
__PROGRAML_ATOMIC(atomicAdd, __atomic_fetch_add, unsigned long long)
__PROGRAML_ATOMIC(atomicAdd, __atomic_fetch_add, float)
__PROGRAML_ATOMIC(atomicAdd, __atomic_fetch_add, double)
__PROGRAML_ATOMIC(atomicSub, __atomic_fetch_sub, int)
__PROGRAML_ATOMIC(atomicSub, __atomic_fetch_sub, unsigned int)
__PROGRAML_ATOMIC(atomicExch, __atomic_exchange_n, int)
__PROGRAML_ATOMIC(atomicExch, __atomic_exchange_n, unsigned int)
__PROGRAML_ATOMIC(atomicMin, __atomic_fetch_min, int)
__PROGRAML_ATOMIC(atomicMin, __atomic_fetch_min, unsigned int)
__PROGRAML_ATOMIC(atomicMax, __atomic_fetch_max, int)
__PROGRAML_ATOMIC(atomicMax, __atomic_fetch_max, unsigned int)
__PROGRAML_ATOMIC(atomicAnd, __atomic_fetch_and, int)
__PROGRAML_ATOMIC(atomicOr, __atomic_fetch_or, int)
__PROGRAML_ATOMIC(atomicXor, __atomic_fetch_xor, int)
static __device__ __inline__ void __threadfence(void) { __nvvm_membar_gl(); }
static __device__ __inline__ void __threadfence_block(void) { __nvvm_membar_cta(); }
#undef __PROGRAML_ATOMIC
