/* libFuzzer target: the fault-script parser, the pre-run check and the
 * canonical text. Input: byte 0 picks the mode (bit 0) and the mesh shape
 * (bits 1..), the rest is a script file's text (kill and repair lines). Invariants checked:
 * nothing crashes or leaks, every accepted event prints to a text that
 * parses back to the same event, and the check's verdict is consistent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/error.h"
#include "ftmesh/faults.h"

static void roundtrip(const ftm_fault_event *e, int mode)
{
    char buf[128];
    ftm_fault_event back;
    ftm_fault_format(e, mode, buf, sizeof buf);
    if (ftm_fault_parse_line(buf, mode, &back, NULL, 0))
        abort();
    if (back.repair != e->repair || (e->repair && e->phase != FTM_PHASE_START) ||
        back.kind != e->kind || back.r != e->r || back.c != e->c || back.when != e->when ||
        back.phase != e->phase || back.pkts != e->pkts ||
        (e->kind == FTM_FAULT_LINK &&
         (back.r2 != e->r2 || back.c2 != e->c2 || back.oneway != e->oneway)))
        abort();
}

static void check(ftm_fault_script *s, unsigned shape)
{
    ftm_mesh m;
    int rows = 1 + (int)(shape % 6), cols = 1 + (int)((shape / 6) % 6);
    if (ftm_mesh_init(&m, rows, cols, (int)(shape / 36) & 1))
        return;
    ftm_fault_verdict v;
    char detail[256];
    int rc = ftm_fault_script_check(s, &m, 1 + (long)(shape % 7), &v, detail, sizeof detail);
    if (rc == FTM_EPARTITION && (v.a < 0 || v.b < 0 || v.a == v.b))
        abort();
    if (rc && (v.event < 0 || v.event >= s->n))
        abort();
    if (!rc && v.event != -1)
        abort();
    for (int i = 1; i < s->n; i++)
        if (ftm_fault_cmp(&s->ev[i - 1], &s->ev[i]) > 0)
            abort();
    ftm_mesh_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] & 1;
    unsigned shape = data[0] >> 1;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    ftm_fault_script s;
    char detail[256];
    ftm_fault_script_init(&s, mode);
    if (!ftm_fault_script_parse_text(&s, text, len, 0, detail, sizeof detail)) {
        for (int i = 0; i < s.n; i++)
            roundtrip(&s.ev[i], mode);
        check(&s, shape);
    }
    ftm_fault_script_free(&s);
    /* The whole input as one command-line event. */
    char *one = malloc(len + 1);
    if (!one)
        return 0;
    memcpy(one, text, len);
    one[len] = 0;
    ftm_fault_event e;
    if (!ftm_fault_parse(one, mode, &e, detail, sizeof detail))
        roundtrip(&e, mode);
    if (!ftm_fault_parse_repair(one, mode, &e, detail, sizeof detail))
        roundtrip(&e, mode);
    /* and as a kill-and-repair process: every kill back a step later */
    ftm_fault_script_init(&s, mode);
    if (!ftm_fault_script_parse_text(&s, text, len, 0, detail, sizeof detail) &&
        !ftm_fault_script_repair_after(&s, NULL, 1 + (data[0] & 3), 0)) {
        for (int i = 0; i < s.n; i++)
            roundtrip(&s.ev[i], mode);
        check(&s, shape);
    }
    ftm_fault_script_free(&s);
    free(one);
    return 0;
}
