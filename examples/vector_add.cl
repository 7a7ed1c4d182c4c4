// An OpenCL kernel, as in the device-mapping data set: one work-item per element.
kernel void vector_add(global const float *a, global const float *b, global float *c, const int n) {
  int i = get_global_id(0);
  if (i < n) {
    c[i] = a[i] + b[i];
  }
}
