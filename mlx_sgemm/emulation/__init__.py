"""Float32-accurate products on INT8 tensor cores by Ozaki scheme II: the moduli
and their CRT constants (:mod:`.moduli`), the numpy reference of the method
(:mod:`.scheme`), its kernels on a Hopper GPU (:mod:`.gpu`), the op
:func:`~.op.int8_emulated` and :func:`~.op.assess` (:mod:`.op`), and the
INT8 mma.sync residue GEMM for other CUDA GPUs (:mod:`.residue_gemm`)."""
