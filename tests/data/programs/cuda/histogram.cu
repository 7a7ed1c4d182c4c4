// Histogram of bytes with per-block shared bins merged by atomics; a device-side switch classifies bytes.
#define BINS 4

__device__ int classify(unsigned char c) {
  switch (c >> 6) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 2;
    default: return 3;
  }
}

__global__ void histogram(const unsigned char *data, int n, unsigned int *bins) {
  __shared__ unsigned int local[BINS];
  if (threadIdx.x < BINS) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[classify(data[i])], 1u);
  __syncthreads();
  if (threadIdx.x < BINS) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}
