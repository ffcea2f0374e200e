/* NN_CLONES: AVX-512 and AVX2 clones of a loop next to the default one,
 * picked once at load time (an ifunc). Same bits in every clone: -std=c11
 * contracts nothing into FMAs and the vectoriser does not reassociate.
 *
 * The ifunc's resolver runs while the dynamic linker relocates, before a
 * sanitizer's runtime is initialised; under ThreadSanitizer it crashes the
 * program before main. So sanitizer builds, non-x86 targets and compilers
 * without the attribute get the default clone only (the same bits). */
#ifndef FTMESH_NN_CLONES_H
#define FTMESH_NN_CLONES_H

#ifndef __has_feature
#define __has_feature(x) 0
#endif

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) ||          \
    __has_feature(thread_sanitizer) || __has_feature(address_sanitizer) ||    \
    __has_feature(memory_sanitizer) || !defined(__x86_64__) || !defined(__GNUC__)
#define NN_CLONES
#else
#define NN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

#endif
