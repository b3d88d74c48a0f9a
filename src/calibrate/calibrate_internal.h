/* What es_calibrate keeps: the steps it read (their terms and times, and what
 * became of each), the fit, and the logs' provenance for model.json.
 * Invariant: steps are in (log, rank, line) order; roles say which part of
 * the fit each step is in, and the figures in info are computed from them. */
#ifndef ES_CALIBRATE_INTERNAL_H
#define ES_CALIBRATE_INTERNAL_H

#include <stdint.h>

#include "equishard/equishard.h"

typedef enum cal_role { CAL_WARMUP = 0, CAL_FIT, CAL_HELD_OUT, CAL_OUTLIER } cal_role;

typedef struct cal_step {
    uint32_t log;
    int64_t rank, step;
    size_t line;
    double seconds;
    double x[ES_TERM_COUNT];
    double frames_sum;    /* unpadded frames: tells missing_emb apart from frames */
    cal_role role;
} cal_step;

typedef struct cal_log {
    char *path;
    uint64_t digest;      /* xxh3-64 of the file */
    size_t lines;
} cal_log;

struct es_calibration {
    es_calibrate_settings s;
    char *time_field;     /* s.time_field points here */
    cal_step *steps;
    size_t n_steps, cap_steps;
    cal_log *logs;
    size_t n_logs;
    es_calibration_info info;
    es_calibration_term terms[ES_TERM_COUNT];
};

/* step_log.c: reads every log into c->steps and c->logs. */
int es_cal_read_logs(es_context *ctx, es_calibration *c, const es_cost_table *t,
                     const char *const *logs, size_t n_logs);

#endif
