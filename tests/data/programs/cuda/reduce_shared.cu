// Sum of squares: a tree reduction in shared memory per block, then one atomic add per block.
#define BLOCK 256

__device__ float square(float v) { return v * v; }

__global__ void __launch_bounds__(BLOCK) sum_squares(const float *in, float *out, int n) {
  __shared__ float partial[BLOCK];
  unsigned t = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x + t;
  partial[t] = i < n ? square(in[i]) : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    __syncthreads();
  }
  if (t == 0) atomicAdd(out, partial[0]);
}
