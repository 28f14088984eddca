// The helpers of MLX's Metal prelude that custom kernels use (MLX's
// mlx/backend/metal/kernels/utils.h, which metal_kernel puts in front of every
// kernel; MLX's custom-kernel documentation calls elem_to_loc and ceildiv
// from kernel bodies): the location of an element of a strided array, and a
// rounded-up division. Same names, arguments and results as MLX's.
#ifndef METAL_HARNESS_MLX_UTILS_H
#define METAL_HARNESS_MLX_UTILS_H

// The offset, in elements, of row-major element `elem` of an array of the
// given shape and strides (an input's <name>_shape, <name>_strides, <name>_ndim).
template <typename IdxT = int64_t>
inline IdxT elem_to_loc(IdxT elem, constant const int* shape, constant const int64_t* strides,
                        int ndim) {
  IdxT loc = 0;
  for (int d = ndim - 1; d >= 0 && elem > 0; --d) {
    loc += (elem % shape[d]) * IdxT(strides[d]);
    elem /= shape[d];
  }
  return loc;
}

// The same for a grid position: x along the last dimension, y along the one
// before, z along all the others.
template <typename IdxT = int64_t>
inline IdxT elem_to_loc(uint3 elem, constant const int* shape, constant const int64_t* strides,
                        int ndim) {
  IdxT loc = elem.x * IdxT(strides[ndim - 1]) + elem.y * IdxT(strides[ndim - 2]);
  uint rest = elem.z;
  for (int d = ndim - 3; d >= 0; --d) {
    loc += (rest % shape[d]) * IdxT(strides[d]);
    rest /= shape[d];
  }
  return loc;
}

template <typename IdxT = int64_t>
inline IdxT elem_to_loc_1(uint elem, constant const int64_t& stride) {
  return elem * IdxT(stride);
}

template <typename IdxT = int64_t>
inline IdxT elem_to_loc_2(uint2 elem, constant const int64_t* strides) {
  return elem.x * IdxT(strides[1]) + elem.y * IdxT(strides[0]);
}

template <typename IdxT = int64_t>
inline IdxT elem_to_loc_3(uint3 elem, constant const int64_t* strides) {
  return elem.x * IdxT(strides[2]) + elem.y * IdxT(strides[1]) + elem.z * IdxT(strides[0]);
}

// ceil(n / m) for positive integers.
template <typename T, typename U>
inline T ceildiv(T n, U m) {
  return (n + m - 1) / m;
}

#endif  // METAL_HARNESS_MLX_UTILS_H
