// From MLX's custom-kernel documentation (docs/src/dev/custom_metal_kernels.rst,
// MLX 0.32): the body of the "myexp" kernel (exp_elementwise), as written there.
uint elem = thread_position_in_grid.x;
T tmp = inp[elem];
out[elem] = metal::exp(tmp);
