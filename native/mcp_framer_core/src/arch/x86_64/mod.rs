//! x86-64: SSE2, which every such CPU has, and AVX2 and AVX-512, used
//! where the CPU has them.

pub(super) mod avx2;
pub(super) mod avx512;
pub(super) mod sse2;
