#pragma once
// Compiles a hot CPU loop twice on x86-64 GCC and picks the clone at load time: for
// x86-64-v3 (AVX2 and FMA, every x86 server CPU since 2015) and for the baseline. The default
// build targets SSE2 only, a quarter of the floating-point rate LibTorch's own kernels get.
// Helpers such loops call are marked TESSERA_INLINE so they are compiled with the same target.
// TESSERA_AVX2 and TESSERA_AVX2_CPU name the same target for a kernel dispatched by hand, so it
// computes (and rounds) as the clones do.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && __GNUC__ >= 12
#define TESSERA_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define TESSERA_AVX2 __attribute__((target("arch=x86-64-v3")))
#define TESSERA_AVX2_CPU "x86-64-v3"
#elif defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TESSERA_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#define TESSERA_AVX2 __attribute__((target("avx2")))
#define TESSERA_AVX2_CPU "avx2"
#else
#define TESSERA_VECTOR_CLONES
#endif
#define TESSERA_INLINE inline __attribute__((always_inline))

// An AVX-512 version of a kernel beside the clones, called where the CPU has it (see
// gemm.hpp's cpu_kernels; x86-64 GCC >= 12, whose ISA levels name it).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && __GNUC__ >= 12
#define TESSERA_AVX512_VERSIONS 1
#define TESSERA_AVX512 __attribute__((target("arch=x86-64-v4")))
#endif
