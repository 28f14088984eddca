"""Float32-accurate products on INT8 tensor cores by Ozaki scheme II: the moduli
and their CRT constants (:mod:`.moduli`), the numpy reference of the method
(:mod:`.scheme`), and the INT8 residue GEMM on a CUDA GPU (:mod:`.residue_gemm`)."""
