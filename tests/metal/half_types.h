// What MLX's Metal prelude gives a kernel with half inputs, for the CPU harness:
// Metal's half and bfloat, as clang's _Float16 (IEEE binary16) and __bf16 (the
// upper 16 bits of a binary32), which convert to float exactly as Metal's do,
// and MLX's names for them, which its signatures use (`const device
// bfloat16_t* a`; mlx/backend/metal/kernels/utils.h and bf16.h).
// tests/metal/test_metal_half_operands.py includes it after metal_compat.h.
#ifndef METAL_HARNESS_HALF_TYPES_H
#define METAL_HARNESS_HALF_TYPES_H

typedef _Float16 half;
typedef __bf16 bfloat;
typedef half float16_t;
typedef bfloat bfloat16_t;

#endif  // METAL_HARNESS_HALF_TYPES_H
