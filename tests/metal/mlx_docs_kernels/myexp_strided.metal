// From MLX's custom-kernel documentation (docs/src/dev/custom_metal_kernels.rst,
// MLX 0.32): the body of "myexp_strided" (exp_elementwise without the row-contiguous copy), as written there.
uint elem = thread_position_in_grid.x;
// Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
T tmp = inp[loc];
// Output arrays are always row contiguous
out[elem] = metal::exp(tmp);
