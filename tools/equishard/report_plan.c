/* report_plan.h: es_plan_dir's values as the document the report code draws. */
#include "report_plan.h"

static json_t *model_view(const es_cost_model *m)
{
    json_t *cm = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "frame_rate",
                           m->frame_rate, "w_frames", m->w_frames, "w_text", m->w_text,
                           "w_speech_tokens", m->w_speech_tokens, "w_frames_sq", m->w_frames_sq,
                           "w_missing_emb", m->w_missing_emb, "w_overhead", m->w_overhead,
                           "w_batch", m->w_batch);
    /* the chart's unit is seconds when the weights came from a model.json */
    json_object_set_new(cm, "source", m->source ? json_pack("{s:s?}", "path", NULL) : json_null());
    return cm;
}

json_t *report_plan_view(const es_plan_dir *d)
{
    es_plan_dir_info in;
    es_plan_settings s;
    es_plan_metrics m;
    es_plan_dir_get_info(d, &in);
    es_plan_dir_settings(d, &s);
    es_plan_dir_metrics(d, &m);
    const es_cost_model *cm = &s.model;
    json_t *filter = json_pack("{s:f, s:f, s:I, s:I, s:f, s:f}", "min_length", cm->min_length,
                               "max_length", cm->max_length, "token_min_length",
                               (json_int_t)cm->token_min_length, "token_max_length",
                               (json_int_t)cm->token_max_length, "min_output_input_ratio",
                               cm->min_output_input_ratio, "max_output_input_ratio",
                               cm->max_output_input_ratio);
    json_t *params = json_pack("{s:s, s:I, s:I, s:o, s:o}", "mode",
                               es_enum_name(ES_ENUM_PLAN_MODE, (int)in.mode), "world_size",
                               (json_int_t)in.world_size, "workers", (json_int_t)in.workers,
                               "cost_model", model_view(cm), "filter", filter);
    json_t *filtered = json_object();
    for (size_t r = 1; r < es_enum_size(ES_ENUM_FILTER_REASON); r++)
        json_object_set_new(filtered, es_enum_name(ES_ENUM_FILTER_REASON, (int)r),
                            json_integer((json_int_t)m.filtered_by_reason[r]));
    json_t *metrics = json_pack("{s:f, s:f, s:f, s:I, s:f, s:f, s:I, s:o}", "imbalance",
                                m.imbalance, "lower_bound", m.lower_bound, "lower_bound_gap",
                                m.lower_bound_gap, "batch_spread", (json_int_t)m.batch_spread,
                                "retention", m.retention, "step_straggler", m.step_straggler,
                                "kept", (json_int_t)m.kept, "filtered", filtered);
    json_t *ranks = json_array();
    for (uint32_t r = 0; ranks && r < in.n_ranks; r++) {
        es_plan_load l;
        es_plan_dir_rank_load(d, r, -1, &l);
        json_array_append_new(ranks, json_pack("{s:I, s:f, s:I, s:I, s:I}", "rank",
                                               (json_int_t)r, "cost", l.cost, "utterances",
                                               (json_int_t)l.utterances, "frames",
                                               (json_int_t)l.frames, "batches",
                                               (json_int_t)l.batches));
    }
    return json_pack("{s:o, s:o, s:o}", "parameters", params, "metrics", metrics, "ranks", ranks);
}
