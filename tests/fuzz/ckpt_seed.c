/* Writes seed inputs for fuzz_checkpoint: a valid checkpoint (mode byte 0),
 * the same without its checksum (mode byte 1) and a round-trip seed. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "ftmesh/checkpoint.h"

static int put(const char *dir, const char *name, unsigned char mode, const unsigned char *b,
               size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    fputc(mode, f);
    fwrite(b, 1, n, f);
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    float p[5] = { 1, -2, 3.5f, 0, 1e-3f }, m0[5] = { 0 }, m1[5] = { 1, 1, 1, 1, 1 };
    double loss[2] = { 2.3, 2.2 };
    for (int kind = 1; kind <= 3; kind++) {
        ftm_ckpt_meta mt;
        memset(&mt, 0, sizeof mt);
        mt.model.kind = kind == 1 ? 1 : 2;
        mt.model.depth = kind == 1 ? 8 : 2;
        mt.optim.lr = 0.1f;
        mt.optim.kind = kind;
        mt.batch = 8;
        mt.micro = 4;
        mt.nparams = 5;
        ftm_ckpt_state st = { .step = 2, .examples = 16, .nparams = 5, .params = p,
                              .nmoments = ftm_ckpt_nmoments(kind), .moment = { m0, m1 },
                              .losses = loss };
        unsigned char *buf;
        size_t len;
        char name[32];
        if (ftm_ckpt_encode(&mt, &st, &buf, &len))
            return 1;
        snprintf(name, sizeof name, "valid-%d", kind);
        int bad = put(argv[1], name, 0, buf, len);
        snprintf(name, sizeof name, "body-%d", kind);
        bad |= put(argv[1], name, 1, buf, len - 4);
        free(buf);
        if (bad)
            return 1;
    }
    return put(argv[1], "roundtrip", 2, (const unsigned char *)"\x01\x02\x03seed bytes", 14);
}
