/* ftmesh sweep --list: the pod scenarios (sweep.h's data) without running
 * them, so that tests and docs can check what sweep and sweep --throughput
 * model against one list. */
#include "cli.h"
#include "ftmesh/sweep.h"

#include <stdio.h>

static void list_json(const ftm_sweep_pod *pod)
{
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_begin_obj(&j, NULL);
    cli_json_begin_arr(&j, "models");
    for (int md = 0; md < FTM_SWEEP_NMODELS; md++) {
        cli_json_begin_obj(&j, NULL);
        cli_json_str(&j, "model", pod->model[md]);
        cli_json_u64(&j, "bytes", pod->params[md] * 4);
        cli_json_end(&j);
    }
    cli_json_end(&j);
    cli_json_begin_arr(&j, "scenarios");
    for (int mi = 0; mi < FTM_SWEEP_NMESHES; mi++)
        for (int i = 0; i < pod->nscen; i++) {
            const ftm_sweep_scenario *s = &pod->scen[i];
            char mesh[32];
            snprintf(mesh, sizeof mesh, "%dx%d", pod->rc[mi][0], pod->rc[mi][1]);
            cli_json_begin_obj(&j, NULL);
            cli_json_str(&j, "mesh", mesh);
            cli_json_str(&j, "scenario", s->name);
            cli_json_str(&j, "fault", s->fault[mi]);
            cli_json_bool(&j, "sweep", s->in_sweep);
            if (s->tput_name)
                cli_json_str(&j, "throughput", s->tput_name);
            else
                cli_json_null(&j, "throughput");
            cli_json_end(&j);
        }
    cli_json_end(&j);
    cli_json_end(&j);
}

int cli_sweep_list(int json)
{
    const ftm_sweep_pod *pod = ftm_sweep_pod_data();
    if (json) {
        list_json(pod);
        return 0;
    }
    printf("# the pod scenarios: torus, scenario, its name in sweep --throughput ('-':\n"
           "# not there; 'tests-only': not a sweep row either), the faults as options\n");
    for (int mi = 0; mi < FTM_SWEEP_NMESHES; mi++)
        for (int i = 0; i < pod->nscen; i++) {
            const ftm_sweep_scenario *s = &pod->scen[i];
            const char *tput = s->tput_name ? s->tput_name : s->in_sweep ? "-" : "tests-only";
            printf("%dx%-3d %-20s ", pod->rc[mi][0], pod->rc[mi][1], s->name);
            if (*s->fault[mi])
                printf("%-15s %s\n", tput, s->fault[mi]);
            else
                printf("%s\n", tput);
        }
    for (int md = 0; md < FTM_SWEEP_NMODELS; md++)
        printf("# model %-10s %zu fp32 gradients\n", pod->model[md], pod->params[md]);
    return 0;
}
