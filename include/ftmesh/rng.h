/* Counter-based random numbers: a value is a pure function of a key tuple,
 * never of a per-thread stream, so the same example gets the same random
 * bits on whichever chip computes it.
 *
 * Mixing function: SplitMix64's finaliser (Steele, Lea, Flood, "Fast
 * splittable pseudorandom number generators", OOPSLA 2014), chained over the
 * key words.
 */
#ifndef FTMESH_RNG_H
#define FTMESH_RNG_H

#include <stdint.h>

static inline uint64_t ftm_rng_mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The random streams. Every draw is keyed by the seed and one of two
 * layouts, and the stream keys below keep the streams apart:
 *  - streams that do not depend on the training step: (seed, FTM_RNG_x,
 *    ...), the stream in the second word;
 *  - per-step, per-example streams (BERT masking, dropout):
 *    (seed, step, global example index, FTM_RNG_x [+ layer], element).
 * The values are historical (changing one changes every generated number);
 * a new stream takes a value no other stream in the same layout uses. */
enum ftm_rng_stream {
    /* second word */
    FTM_RNG_PARAMS = 0x9a7a,    /* initial parameters: (tensor, element, 0|1) */
    FTM_RNG_DATA = 0xda7a,      /* data sets: (example id, what, element) */
    /* fourth word, after (step, example) */
    FTM_RNG_EMB_DROP = 1,       /* BERT embedding dropout */
    FTM_RNG_MASK = 7,           /* BERT: is token t masked */
    FTM_RNG_FORCE = 8,          /* BERT: the token masked when none was */
    FTM_RNG_REPL = 9,           /* BERT: [MASK], random word or unchanged */
    FTM_RNG_RAND = 10,          /* BERT: the random word */
    FTM_RNG_ATT_DROP = 100,     /* + layer: attention-probability dropout */
    FTM_RNG_AO_DROP = 200,      /* + layer: attention-output dropout */
    FTM_RNG_FFN_DROP = 300      /* + layer: FFN-output dropout */
};
/* Random faults (ftm_mesh_fail_random): (seed, FTM_RNG_FAULTS, draw, 0, 0).
 * "fault" in ASCII; wider than an int, so it cannot be an enum constant. */
#define FTM_RNG_FAULTS UINT64_C(0x6661756c74)

/* 64 random bits for key (seed, a, b, c, d). */
static inline uint64_t ftm_rng_u64(uint64_t seed, uint64_t a, uint64_t b,
                                   uint64_t c, uint64_t d)
{
    uint64_t h = ftm_rng_mix(seed);
    h = ftm_rng_mix(h ^ a);
    h = ftm_rng_mix(h ^ b);
    h = ftm_rng_mix(h ^ c);
    return ftm_rng_mix(h ^ d);
}

/* Uniform float in [0, 1) with 24 random bits. */
static inline float ftm_rng_uniform(uint64_t seed, uint64_t a, uint64_t b,
                                    uint64_t c, uint64_t d)
{
    return (float)(ftm_rng_u64(seed, a, b, c, d) >> 40) * (1.0f / 16777216.0f);
}

#endif
