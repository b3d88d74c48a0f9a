/* From per-row results (es_row_result) to findings: the thresholds, the median
 * norm, duplicate rows (checksum candidates confirmed byte by byte) and the
 * speaker-mean comparison. Runs on the host for both backends. */
#ifndef ES_VALIDATE_FINDINGS_H
#define ES_VALIDATE_FINDINGS_H

#include "validate/validate_result.h"

/* NaN, Inf, zero/abnormal norm, far from centroid (utterances), duplicates of
 * one matrix. *median gets the median norm of its finite nonzero rows (0 when
 * none). */
int es_vfind_rows(es_context *ctx, const es_validate_settings *s, const es_vset *set,
                  int is_speaker, const es_row_result *res, int on_device,
                  es_validate_result *r, double *median);

/* spk_mean_mismatch: speaker rows (host floats, spk->m->n × dim) against the
 * means of their utterances (mean, n_finite: n_speakers entries). */
int es_vfind_spk_mean(es_context *ctx, const es_validate_settings *s, const es_vset *spk,
                      const es_row_result *spk_res, const float *spk_rows, const double *mean,
                      const uint32_t *n_finite, es_validate_result *r);

/* Median of v[0..n) (v is reordered); 0 when n == 0. */
double es_vmedian(double *v, size_t n);

#endif
