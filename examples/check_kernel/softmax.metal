// Softmax along the rows of x (rows x cols, row-contiguous): the body of an
// mx.fast.metal_kernel with input x, output out, template T. One threadgroup
// per row (grid = (threads, rows, 1)); its threads stride along the row. Each
// reduction goes through the simdgroups (simd_max, simd_sum) and then across
// them through threadgroup memory.
uint row = threadgroup_position_in_grid.y;
uint tid = thread_position_in_threadgroup.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
uint n = x_shape[1];
const device T* in = x + row * n;
device T* y = out + row * n;

threadgroup float partial[32];  // one value per simdgroup

// The row's maximum, subtracted before exp so that nothing overflows.
float m = -INFINITY;
for (uint i = tid; i < n; i += threads_per_threadgroup.x) {
  m = max(m, float(in[i]));
}
m = simd_max(m);
if (lane == 0) partial[sg] = m;
threadgroup_barrier(mem_flags::mem_threadgroup);
m = partial[0];
for (uint s = 1; s < simdgroups_per_threadgroup; ++s) m = max(m, partial[s]);
threadgroup_barrier(mem_flags::mem_threadgroup);  // all have read partial before it is reused

// The sum of the exponentials.
float sum = 0.0f;
for (uint i = tid; i < n; i += threads_per_threadgroup.x) {
  sum += exp(float(in[i]) - m);
}
sum = simd_sum(sum);
if (lane == 0) partial[sg] = sum;
threadgroup_barrier(mem_flags::mem_threadgroup);
sum = 0.0f;
for (uint s = 0; s < simdgroups_per_threadgroup; ++s) sum += partial[s];

for (uint i = tid; i < n; i += threads_per_threadgroup.x) {
  y[i] = T(exp(float(in[i]) - m) / sum);
}
