/* libFuzzer target: the checkpoint decoder. Byte 0 picks how the rest is
 * used:
 *   0: decoded as a file, as is (magic, lengths and checksum must hold);
 *   1: its total-length field and checksum are fixed first, so the layout
 *      and value checks behind the checksum are reached;
 *   2: it seeds a small valid state that is encoded, decoded and compared.
 * Invariants: no crash or leak, a refused file leaves nothing allocated, a
 * decoded one has consistent sizes, and mode 2 round-trips bitwise. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/checkpoint.h"
#include "ftmesh/error.h"

static void decode(const uint8_t *buf, size_t len)
{
    ftm_ckpt_state st;
    ftm_ckpt_meta meta;
    char detail[256];
    int rc = ftm_ckpt_decode(buf, len, NULL, &meta, &st, detail, sizeof detail);
    if (rc) {
        if (st.params || st.moment[0] || st.moment[1] || st.losses || st.chip_dead || st.script)
            abort();
        return;
    }
    if (st.nparams != meta.nparams || st.nmoments != ftm_ckpt_nmoments(meta.optim.kind))
        abort();
    ftm_ckpt_state_free(&st);
}

static void fixed_envelope(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size + 4);
    if (!buf)
        return;
    memcpy(buf, data, size);
    size_t len = size + 4;
    if (len >= 24)
        for (int i = 0; i < 8; i++)
            buf[16 + i] = (uint8_t)((uint64_t)len >> (8 * i));
    uint32_t crc = ftm_ckpt_crc32c(0, buf, size);
    for (int i = 0; i < 4; i++)
        buf[size + (size_t)i] = (uint8_t)(crc >> (8 * i));
    decode(buf, len);
    free(buf);
}

static void roundtrip(const uint8_t *data, size_t size)
{
    ftm_ckpt_meta mt;
    memset(&mt, 0, sizeof mt);
    mt.model.kind = 1 + (size ? data[0] & 1 : 0);
    mt.model.depth = 8;
    mt.optim.lr = 0.1f;
    mt.optim.kind = 1 + (size > 1 ? data[1] % 3 : 0);
    mt.batch = 1 + (size > 2 ? data[2] : 0);
    mt.micro = 4;
    size_t np = size > 3 ? 1 + size / 4 : 1;
    mt.nparams = np;
    ftm_ckpt_state st = { 0 };
    float *arr = calloc(np * 3, sizeof(float));
    double losses[3] = { 1.5, -0.0, 1e300 };
    if (!arr)
        return;
    memcpy(arr, data, size < np * 12 ? size : np * 12);
    st.step = 3;
    st.examples = 3 * (uint64_t)mt.batch;
    st.nparams = np;
    st.params = arr;
    st.nmoments = ftm_ckpt_nmoments(mt.optim.kind);
    st.moment[0] = arr + np;
    st.moment[1] = st.nmoments > 1 ? arr + 2 * np : NULL;
    st.losses = losses;
    unsigned char dead[5 * 6] = { 0 };
    char script[] = "repair host:0,0@4\n1,1@5:forward\n";
    if (size > 4 && (data[4] & 1)) { /* a mesh section */
        st.rows = 2;
        st.cols = 3;
        st.torus = data[4] >> 7;
        for (int i = 0; i < 30; i++)
            dead[i] = (uint8_t)((data[4] >> (i % 7)) & 1);
        st.chip_dead = dead;
        st.link_dead = dead + 6;
        st.script = script;
        st.script_len = strlen(script);
    }
    unsigned char *buf;
    size_t len;
    ftm_ckpt_state back;
    if (ftm_ckpt_encode(&mt, &st, &buf, &len))
        abort();
    if (ftm_ckpt_decode(buf, len, &mt, NULL, &back, NULL, 0) ||
        memcmp(back.params, arr, np * 4) || memcmp(back.moment[0], arr + np, np * 4) ||
        memcmp(back.losses, losses, sizeof losses) || back.rows != st.rows ||
        back.script_len != st.script_len ||
        (st.rows && (memcmp(back.chip_dead, dead, 30) || memcmp(back.script, script, st.script_len))))
        abort();
    ftm_ckpt_state_free(&back);
    free(buf);
    free(arr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0: decode(data + 1, size - 1); break;
    case 1: fixed_envelope(data + 1, size - 1); break;
    default: roundtrip(data + 1, size - 1); break;
    }
    return 0;
}
