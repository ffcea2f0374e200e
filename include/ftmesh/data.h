/* data: the training examples the models read: CIFAR-10 batches, a text
 * corpus, or synthetic images and token sequences, a pure function of
 * (seed, id). A loaded dataset is read-only and may be shared by every
 * chip's replica (model.h); the loaders print nothing.
 */
#ifndef FTMESH_DATA_H
#define FTMESH_DATA_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>

/* Special tokens of the BERT vocabulary (real words start at FTM_TOK_FIRST). */
enum { FTM_TOK_PAD = 0, FTM_TOK_MASK = 1, FTM_TOK_CLS = 2, FTM_TOK_SEP = 3,
       FTM_TOK_UNK = 4, FTM_TOK_FIRST = 5 };

typedef struct ftm_dataset ftm_dataset;

/* The loaders print nothing: on an error they return the code and, when
 * why is not NULL, write a one-line reason naming the file into why[0..len)
 * ("no data_batch_1.bin in it", "CIFAR batch F: record 3 is 3066 bytes,
 * want 3073", "empty", ...). On an error *d is NULL. */

/* CIFAR-10 has 10 classes: a label byte outside 0..9 is FTM_EFORMAT. */
#define FTM_DATA_CIFAR_CLASSES 10
/* Loads DIR/data_batch_1.bin (required) and data_batch_2..5.bin (those
 * present), CIFAR-10 binary: 1 label byte + 3072 pixel bytes, R, G, B
 * planes of 32x32. FTM_EIO when DIR or a batch cannot be read (or batch 1
 * is missing), FTM_EFORMAT on an empty batch, a short record or a label
 * outside 0..FTM_DATA_CIFAR_CLASSES-1, FTM_ENOMEM. */
FTM_EXTERN int ftm_data_load_cifar(ftm_dataset **d, const char *dir, char *why, size_t len);
/* Largest corpus read, in MiB: an endless input (/dev/zero) is refused
 * with FTM_ERANGE once it passes this size. */
#define FTM_DATA_CORPUS_MAX_MIB 64
/* Loads a plain-text corpus from file ("-" = standard input; pipes work:
 * the input is read once): words are maximal runs of letters/digits,
 * lower-cased; the vocab is the most frequent (vocab - FTM_TOK_FIRST) words
 * (ties alphabetical), other words map to FTM_TOK_UNK; vocab 0 keeps every
 * word, ids by rank (a model maps ids beyond its vocab to FTM_TOK_UNK, so
 * the result is the same). FTM_EIO (cannot open or read), FTM_EFORMAT
 * (empty, or no word in it), FTM_ERANGE (too large), FTM_EINVAL (vocab 1..
 * FTM_TOK_FIRST), FTM_ENOMEM. */
FTM_EXTERN int ftm_data_load_corpus(ftm_dataset **d, const char *file, int vocab, char *why, size_t len);
FTM_EXTERN void ftm_data_free(ftm_dataset *d);
/* Examples held (images, or corpus tokens). */
FTM_EXTERN long ftm_data_size(const ftm_dataset *d);
/* A fingerprint of what d holds (images and labels, or the corpus's
 * token ids), never 0; 0 for NULL (synthetic data): a checkpoint records
 * it, so a run resumed on other data is refused. */
FTM_EXTERN uint64_t ftm_data_fingerprint(const ftm_dataset *d);
/* Token id of a word in a corpus dataset (FTM_TOK_UNK if not in vocab). */
FTM_EXTERN int ftm_data_word_id(const ftm_dataset *d, const char *word);
/* Image example `id` (3,S,S, normalised) and its label; d NULL = the
 * 10-class synthetic set (ftm_data_synth_image), a pure function of (seed, id).
 * CIFAR needs S == 32 and uses id mod size, with a random horizontal flip
 * keyed by (seed, id). */
FTM_EXTERN int ftm_data_image(const ftm_dataset *d, uint64_t seed, uint64_t id, int S,
                   float *img, int *label);
/* Synthetic image example `id` of a set with `classes` classes (label in
 * 0..classes-1; class = pattern orientation and colour), a pure function of
 * (seed, id, S, classes). ftm_data_image with d NULL is this with 10
 * classes. FTM_EINVAL if S or classes < 1. */
FTM_EXTERN int ftm_data_synth_image(uint64_t seed, uint64_t id, int S, int classes,
                         float *img, int *label);
/* Token sequence `id` (T tokens, FTM_TOK_CLS first, FTM_TOK_PAD after the
 * end, valid[t] = 1 for real tokens); d NULL = synthetic topic sequences
 * (each sequence draws from one topic's words in a strided order). */
FTM_EXTERN int ftm_data_tokens(const ftm_dataset *d, uint64_t seed, uint64_t id, int T,
                    int V, int *tok, unsigned char *valid);

#endif
