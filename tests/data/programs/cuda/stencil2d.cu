// One Jacobi step of the 2-D heat equation with a shared-memory tile and halo.
#define TILE 16

__constant__ float alpha;

template <typename T>
__device__ T at(const T *grid, int width, int x, int y) { return grid[y * width + x]; }

__global__ void jacobi(const float *in, float *out, int width, int height) {
  __shared__ float tile[TILE + 2][TILE + 2];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
  if (x >= width || y >= height) return;
  tile[ty][tx] = at(in, width, x, y);
  if (threadIdx.x == 0 && x > 0) tile[ty][0] = at(in, width, x - 1, y);
  if (threadIdx.x == TILE - 1 && x + 1 < width) tile[ty][TILE + 1] = at(in, width, x + 1, y);
  if (threadIdx.y == 0 && y > 0) tile[0][tx] = at(in, width, x, y - 1);
  if (threadIdx.y == TILE - 1 && y + 1 < height) tile[TILE + 1][tx] = at(in, width, x, y + 1);
  __syncthreads();
  if (x == 0 || y == 0 || x == width - 1 || y == height - 1) {
    out[y * width + x] = tile[ty][tx];
    return;
  }
  float sum = tile[ty][tx - 1] + tile[ty][tx + 1] + tile[ty - 1][tx] + tile[ty + 1][tx];
  out[y * width + x] = tile[ty][tx] + alpha * (sum - 4.0f * tile[ty][tx]);
}
