"""ctypes declarations of include/equishard/equishard.h and the library lookup.

Every structure here mirrors one of the header's, field for field and in order,
and is listed in STRUCTS under its C name: tests/python/test_abi.py compares
each with the library's own layout table (es_abi_layout), so a field added in C
and not here fails that test. Every function gets its argtypes/restype so
ctypes converts and checks arguments. The library is loaded on first use (lib()), so `equishard.loaders`
imports on a training node without libequishard.
"""
import ctypes
import ctypes.util
import os
from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_int32, c_int64, c_size_t,
                    c_uint32, c_uint64, c_void_p)

c_enum = c_int


class AbiField(Structure):
    _fields_ = [("struct_name", c_char_p), ("field", c_char_p), ("offset", c_size_t),
                ("size", c_size_t)]


class CostRow(Structure):
    _fields_ = [("key", c_char_p), ("shard", c_char_p), ("pos", c_uint64),
                ("sample_rate", c_uint32), ("channels", c_uint32), ("samples", c_uint64),
                ("audio_bytes", c_uint64), ("text_len", c_uint32), ("speech_tokens", c_uint32),
                ("spk", c_char_p), ("flags", c_uint32), ("hash", c_uint64),
                ("text_tokens", c_uint32)]


PROGRESS_FN = ctypes.CFUNCTYPE(None, c_void_p, c_size_t, c_size_t)


class MeasureSettings(Structure):
    _fields_ = [("threads", c_int), ("hash", c_int), ("on_error", c_enum), ("root", c_char_p),
                ("progress", PROGRESS_FN), ("progress_user", c_void_p), ("tokenizer", c_void_p),
                ("read_progress", c_void_p), ("read_progress_user", c_void_p),
                ("reserved", c_uint64 * 5)]


class CostModel(Structure):
    _fields_ = [("frame_rate", c_double), ("w_frames", c_double), ("w_text", c_double),
                ("w_speech_tokens", c_double), ("w_frames_sq", c_double),
                ("w_missing_emb", c_double), ("w_overhead", c_double),
                ("min_length", c_double), ("max_length", c_double),
                ("token_min_length", c_uint32), ("token_max_length", c_uint32),
                ("min_output_input_ratio", c_double), ("max_output_input_ratio", c_double),
                ("require_speech_token", c_int), ("token_chars", c_int), ("w_batch", c_double),
                ("source", c_char_p), ("source_digest", c_uint64), ("reserved", c_uint64 * 5)]


class SimulateStepTime(Structure):
    _fields_ = [("steps", c_double), ("straggler", c_double), ("epoch_seconds", c_double),
                ("ideal_seconds", c_double)]


class CalibrateSettings(Structure):
    _fields_ = [("model", CostModel), ("warmup", c_uint32), ("holdout_every", c_uint32),
                ("outlier_mads", c_double), ("terms", c_uint32), ("time_field", c_char_p),
                ("allow_negative_r2", c_int), ("progress", c_void_p), ("progress_user", c_void_p),
                ("reserved", c_uint64 * 5)]


class CalibrationInfo(Structure):
    _fields_ = [("model", CostModel), ("terms_fitted", c_uint32), ("steps_read", c_size_t),
                ("warmup_dropped", c_size_t), ("outliers_dropped", c_size_t),
                ("fit_steps", c_size_t), ("held_out_steps", c_size_t), ("r2_fit", c_double),
                ("r2_held_out", c_double), ("median_error", c_double), ("p95_error", c_double),
                ("median_error_fit", c_double)]


class CalibrationTerm(Structure):
    _fields_ = [("name", c_char_p), ("fitted", c_int), ("weight", c_double), ("share", c_double),
                ("median_error_without", c_double)]


class PlanSettings(Structure):
    _fields_ = [("world_size", c_uint32), ("workers", c_uint32), ("mode", c_enum),
                ("model", CostModel), ("max_frames_in_batch", c_uint64),
                ("batch_size", c_uint32), ("sort_size", c_uint32), ("remainder", c_enum),
                ("seed", c_uint64), ("epoch", c_int64), ("shards_per_worker", c_uint32),
                ("root", c_char_p), ("compress", c_enum), ("tokenizer", c_void_p),
                ("recipe", c_void_p), ("progress", c_void_p), ("progress_user", c_void_p),
                ("build_progress", c_void_p), ("build_progress_user", c_void_p),
                ("reserved", c_uint64 * 2)]


class PlanMetrics(Structure):
    _fields_ = [("imbalance", c_double), ("lower_bound", c_double),
                ("lower_bound_gap", c_double), ("step_straggler", c_double),
                ("retention", c_double), ("batch_spread", c_uint64),
                ("total_batches", c_uint64), ("steps", c_uint64), ("kept", c_uint64),
                ("filtered", c_uint64), ("remainder_batches", c_uint64),
                ("remainder_utterances", c_uint64), ("method", c_char_p),
                ("filtered_by_reason", POINTER(c_uint64)), ("token_note", c_char_p)]


class PlanLoad(Structure):
    _fields_ = [("cost", c_double), ("utterances", c_uint64), ("frames", c_uint64),
                ("batches", c_uint64)]


class PlanBatch(Structure):
    _fields_ = [("step", c_uint64), ("worker", c_uint32), ("cost", c_double),
                ("frames", c_uint64), ("longest", c_uint32), ("repeat", c_int),
                ("n_rows", c_size_t), ("rows", POINTER(c_size_t))]


class ReshardInfo(Structure):
    _fields_ = [("shards", c_uint32), ("shards_per_worker", c_uint32),
                ("shard_cost_min", c_double), ("shard_cost_max", c_double),
                ("shard_cost_mean", c_double), ("shard_max_deviation", c_double),
                ("permutations", c_uint32), ("permutation_max_deviation", c_double)]


class PlanDirInfo(Structure):
    _fields_ = [("format", c_uint32), ("mode", c_enum), ("world_size", c_uint32),
                ("workers", c_uint32), ("seed", c_uint64), ("epoch", c_int64),
                ("n_inputs", c_uint64), ("n_ranks", c_uint64), ("left_out", c_uint64),
                ("unreadable_shards", c_uint64), ("unreadable_utterances", c_uint64),
                ("has_reshard", c_int), ("outdir", c_char_p), ("plan_json", c_char_p),
                ("equishard", c_char_p), ("recipe", c_char_p),
                ("rows_without_tokens", c_uint64), ("reserved", c_uint64 * 2)]


class SimulateSettings(Structure):
    _fields_ = [("loader", c_enum), ("world_size", c_uint32), ("workers", c_uint32),
                ("epoch_first", c_int64), ("epoch_last", c_int64), ("list_shuffle", c_int),
                ("partition", c_int), ("model", CostModel), ("shuffle_size", c_uint32),
                ("sort_size", c_uint32), ("max_frames_in_batch", c_uint64),
                ("batch_size", c_uint32), ("trials", c_uint32), ("seed", c_uint64),
                ("plan_side", c_int), ("plan_dir", c_char_p), ("reserved", c_uint64 * 7)]


class SimulateInput(Structure):
    _fields_ = [("entries", c_size_t), ("utterances", c_uint64), ("kept", c_uint64),
                ("frames", c_uint64), ("seconds", c_double), ("filtered", POINTER(c_uint64)),
                ("token_note", c_char_p)]


class SimulateEpoch(Structure):
    _fields_ = [("epoch", c_int64), ("min_batches", c_double), ("total_batches", c_double),
                ("retention", c_double), ("skipped_batches", c_double),
                ("skipped_utterances", c_double), ("skipped_frames", c_double),
                ("skipped_seconds", c_double), ("utterances", c_uint64), ("frames", c_uint64),
                ("seconds", c_double), ("empty_first_batches", c_uint64)]


class SimulateRank(Structure):
    _fields_ = [("n_shards", c_size_t), ("utterances", c_uint64), ("frames", c_uint64),
                ("seconds", c_double), ("batches", c_double), ("batches_min", c_uint64),
                ("batches_max", c_uint64), ("batches_stddev", c_double),
                ("trained_batches", c_double), ("skipped_utterances", c_double),
                ("skipped_frames", c_double), ("skipped_seconds", c_double)]


class SimulatePlan(Structure):
    _fields_ = [("mode", c_char_p), ("available", c_int), ("error", c_char_p),
                ("metrics", PlanMetrics)]


class ValidateSettings(Structure):
    _fields_ = [("device", c_enum), ("threads", c_int), ("dim", c_size_t),
                ("zero_norm", c_double), ("min_norm", c_double), ("max_norm", c_double),
                ("norm_ratio", c_double), ("min_cosine", c_double), ("spk_mean_tol", c_double),
                ("duplicates", c_int), ("progress", c_void_p), ("progress_user", c_void_p),
                ("reserved", c_uint64 * 6)]


class EmbMatrix(Structure):
    _fields_ = [("data", c_void_p), ("dtype", c_enum), ("n", c_size_t), ("dim", c_size_t),
                ("keys", POINTER(c_char_p))]


class EmbSpeakers(Structure):
    _fields_ = [("speaker", POINTER(c_int32)), ("n_speakers", c_size_t)]


class EmbSources(Structure):
    _fields_ = [("utt_emb", c_char_p), ("utt_keys", c_char_p), ("spk_emb", c_char_p),
                ("spk_keys", c_char_p), ("utt2spk", c_char_p), ("root", c_char_p)]


class ValidateDataSettings(Structure):
    _fields_ = [("model", CostModel), ("loader", c_enum), ("world_size", c_uint32),
                ("workers", c_uint32), ("max_imbalance", c_double), ("reserved", c_uint64 * 8)]


class Finding(Structure):
    _fields_ = [("check", c_enum), ("kind", c_enum), ("key", c_char_p), ("row", c_size_t),
                ("value", c_double), ("other", c_char_p), ("other_row", c_size_t)]


class ValidateInfo(Structure):
    _fields_ = [("device", c_enum), ("utt_rows", c_size_t), ("spk_rows", c_size_t),
                ("utterances", c_size_t), ("speakers", c_size_t), ("dim", c_size_t),
                ("median_utt_norm", c_double), ("median_spk_norm", c_double),
                ("token_note", c_char_p)]


class Value(Structure):  # es_value
    _fields_ = [("type", c_enum), ("elem_type", c_enum), ("len", c_size_t), ("data", c_void_p),
                ("valid", c_void_p), ("i", c_int64), ("d", c_double)]


class Field(Structure):  # es_field
    _fields_ = [("name", c_char_p), ("value", Value)]


class Row(Structure):  # es_row
    _fields_ = [("fields", POINTER(Field)), ("n_fields", c_size_t)]


# es_value_type
(VALUE_NULL, VALUE_BYTES, VALUE_STRING, VALUE_BOOL, VALUE_INT32, VALUE_INT64, VALUE_UINT32,
 VALUE_UINT64, VALUE_FLOAT, VALUE_DOUBLE, VALUE_LIST) = range(11)


class SpeechTokenStats(Structure):
    _fields_ = [("rows_set", c_size_t), ("rows_without", c_size_t), ("unknown_keys", c_size_t)]


class TokenizerInfo(Structure):
    _fields_ = [("path", c_char_p), ("files", c_char_p), ("specials", c_char_p),
                ("vocab_size", c_size_t), ("added_tokens", c_size_t), ("digest", c_uint64),
                ("kind", c_char_p)]


class RecipeInfo(Structure):
    _fields_ = [("path", c_char_p), ("digest", c_uint64), ("loader", c_enum), ("model", CostModel),
                ("max_frames_in_batch", c_uint64), ("batch_size", c_uint32),
                ("shuffle_size", c_uint32), ("sort_size", c_uint32), ("sample_rate", c_uint32),
                ("tokenizer", c_char_p), ("specials", c_char_p), ("allowed_special", c_char_p),
                ("symbol_table", c_char_p), ("non_lang_syms", c_char_p),
                ("split_with_space", c_int), ("tokenizer_unresolved", c_int),
                ("tokenizer_note", c_char_p), ("speed_min", c_double), ("speed_max", c_double)]


# Every structure above under its C name (tests/python/test_abi.py checks each
# against es_abi_layout; a struct added to the header must be added here).
STRUCTS = {
    "es_abi_field": AbiField,
    "es_cost_row": CostRow,
    "es_measure_settings": MeasureSettings,
    "es_cost_model": CostModel,
    "es_simulate_step_time": SimulateStepTime,
    "es_calibrate_settings": CalibrateSettings,
    "es_calibration_info": CalibrationInfo,
    "es_calibration_term": CalibrationTerm,
    "es_plan_settings": PlanSettings,
    "es_plan_metrics": PlanMetrics,
    "es_plan_load": PlanLoad,
    "es_plan_batch": PlanBatch,
    "es_plan_reshard_info": ReshardInfo,
    "es_plan_dir_info": PlanDirInfo,
    "es_simulate_settings": SimulateSettings,
    "es_simulate_input": SimulateInput,
    "es_simulate_epoch": SimulateEpoch,
    "es_simulate_rank": SimulateRank,
    "es_simulate_plan": SimulatePlan,
    "es_validate_settings": ValidateSettings,
    "es_emb_matrix": EmbMatrix,
    "es_emb_speakers": EmbSpeakers,
    "es_emb_sources": EmbSources,
    "es_speech_token_stats": SpeechTokenStats,
    "es_validate_data_settings": ValidateDataSettings,
    "es_finding": Finding,
    "es_validate_info": ValidateInfo,
    "es_value": Value,
    "es_field": Field,
    "es_row": Row,
    "es_tokenizer_info": TokenizerInfo,
    "es_recipe_info": RecipeInfo,
}

P = c_void_p  # opaque handles: es_context*, es_cost_table*, es_plan*, results
STRS = POINTER(c_char_p)
# every function the binding calls: all from the stable header, equishard.h
# (tests/python/test_abi.py), none from equishard_experimental.h
_SIGNATURES = {
    "es_version": (c_char_p, []),
    "es_version_number": (ctypes.c_uint, []),
    "es_abi_layout": (POINTER(AbiField), [POINTER(c_size_t)]),
    "es_enum_field": (c_char_p, [c_int]),
    "es_enum_size": (c_size_t, [c_int]),
    "es_enum_name": (c_char_p, [c_int, c_int]),
    "es_enum_value": (c_int, [c_int, c_char_p, POINTER(c_int)]),
    "es_status_name": (c_char_p, [c_int]),
    "es_context_new": (P, []),
    "es_context_free": (None, [P]),
    "es_errmsg": (c_char_p, [P]),
    "es_context_set": (c_int, [P, c_char_p, c_char_p]),
    "es_flag_name": (c_char_p, [ctypes.c_uint]),
    "es_cost_table_free": (None, [P]),
    "es_cost_table_size": (c_size_t, [P]),
    "es_cost_table_row": (c_int, [P, c_size_t, POINTER(CostRow)]),
    "es_cost_table_write": (c_int, [P, P, c_char_p]),
    "es_cost_table_compress_ahead": (c_int, [P, P]),
    "es_cost_table_read": (c_int, [P, c_char_p, POINTER(P)]),
    "es_cost_table_skip": (c_char_p, [P, c_size_t]),
    "es_cost_table_shard_file": (c_int, [P, c_char_p, POINTER(c_uint64), POINTER(c_int64),
                                         POINTER(c_uint32)]),
    "es_measure_defaults": (None, [POINTER(MeasureSettings)]),
    "es_measure": (c_int, [P, POINTER(MeasureSettings), STRS, c_size_t, POINTER(P)]),
    "es_load_inputs": (c_int, [P, POINTER(MeasureSettings), STRS, c_size_t, POINTER(P)]),
    "es_cost_model_defaults": (None, [POINTER(CostModel)]),
    "es_plan_defaults": (None, [POINTER(PlanSettings)]),
    "es_plan_build": (c_int, [P, POINTER(PlanSettings), P, POINTER(P)]),
    "es_plan_build_subset": (c_int, [P, POINTER(PlanSettings), P, c_char_p, POINTER(P)]),
    "es_plan_free": (None, [P]),
    "es_plan_get_metrics": (c_int, [P, POINTER(PlanMetrics)]),
    "es_plan_rank_load": (c_int, [P, c_uint32, c_int32, POINTER(PlanLoad)]),
    "es_plan_rank_shard_count": (c_size_t, [P, c_uint32, c_uint32]),
    "es_plan_rank_shard": (c_int, [P, P, c_uint32, c_uint32, c_size_t, POINTER(c_char_p)]),
    "es_plan_batch_count": (c_size_t, [P, c_uint32]),
    "es_plan_batch_info": (c_int, [P, c_uint32, c_size_t, POINTER(PlanBatch)]),
    "es_plan_remainder_row": (c_size_t, [P, c_size_t]),
    "es_plan_reshard_info_get": (c_int, [P, POINTER(ReshardInfo)]),
    "es_plan_write": (c_int, [P, P, c_char_p, STRS, c_size_t]),
    "es_plan_dir_open": (c_int, [P, c_char_p, POINTER(P)]),
    "es_plan_dir_free": (None, [P]),
    "es_plan_dir_get_info": (c_int, [P, POINTER(PlanDirInfo)]),
    "es_plan_dir_settings": (c_int, [P, POINTER(PlanSettings)]),
    "es_plan_dir_metrics": (c_int, [P, POINTER(PlanMetrics)]),
    "es_plan_dir_reshard_info": (c_int, [P, POINTER(ReshardInfo)]),
    "es_plan_dir_input": (c_char_p, [P, c_size_t, POINTER(c_uint64)]),
    "es_plan_dir_rank_load": (c_int, [P, c_uint32, c_int32, POINTER(PlanLoad)]),
    "es_plan_dir_rank_file": (c_char_p, [P, c_uint32, c_int32]),
    "es_plan_dir_check_files": (c_int, [P, P]),
    "es_is_cost_table": (c_int, [c_char_p]),
    "es_recipe_read": (c_int, [P, c_char_p, STRS, c_size_t, POINTER(P)]),
    "es_recipe_free": (None, [P]),
    "es_recipe_get_info": (c_int, [P, POINTER(RecipeInfo)]),
    "es_recipe_settings": (c_int, [P, POINTER(PlanSettings), POINTER(SimulateSettings),
                                   POINTER(ValidateDataSettings)]),
    "es_simulate_defaults": (None, [POINTER(SimulateSettings), c_enum]),
    "es_describe_json": (c_int, [P, P, c_enum, POINTER(CostModel), POINTER(c_void_p)]),
    "es_free": (None, [c_void_p]),
    "es_simulate": (c_int, [P, POINTER(SimulateSettings), P, POINTER(P)]),
    "es_simulate_settings_from_plan": (c_int, [P, POINTER(SimulateSettings), c_char_p,
                                               POINTER(c_enum)]),
    "es_simulate_result_free": (None, [P]),
    "es_simulate_input_info": (c_int, [P, POINTER(SimulateInput)]),
    "es_simulate_epoch_count": (c_size_t, [P]),
    "es_simulate_epoch_info": (c_int, [P, c_size_t, POINTER(SimulateEpoch)]),
    "es_simulate_rank_info": (c_int, [P, c_size_t, c_uint32, c_int32, POINTER(SimulateRank)]),
    "es_simulate_rank_shard": (c_char_p, [P, c_size_t, c_uint32, c_size_t]),
    "es_simulate_plan_info": (c_int, [P, c_size_t, POINTER(SimulatePlan)]),
    "es_simulate_plan_rank": (c_int, [P, c_size_t, c_uint32, POINTER(PlanLoad)]),
    "es_simulate_write_json": (c_int, [P, P, c_char_p]),
    "es_validate_defaults": (None, [POINTER(ValidateSettings)]),
    "es_validate_matrices": (c_int, [P, POINTER(ValidateSettings), POINTER(EmbMatrix),
                                     POINTER(EmbMatrix), POINTER(EmbSpeakers), c_int, POINTER(P)]),
    "es_validate": (c_int, [P, POINTER(ValidateSettings), POINTER(EmbSources), P, POINTER(P)]),
    "es_validate_data_defaults": (None, [POINTER(ValidateDataSettings)]),
    "es_validate_data": (c_int, [P, POINTER(ValidateDataSettings), P, P]),
    "es_cost_table_mark_embeddings": (c_int, [P, P, POINTER(EmbSources)]),
    "es_cost_table_set_speech_tokens": (c_int, [P, P, c_char_p, POINTER(SpeechTokenStats)]),
    "es_validate_result_free": (None, [P]),
    "es_validate_count": (c_size_t, [P, c_int]),
    "es_validate_finding": (c_int, [P, c_size_t, POINTER(Finding)]),
    "es_validate_result_info": (c_int, [P, POINTER(ValidateInfo)]),
    "es_validate_write_json": (c_int, [P, P, c_char_p]),
    "es_row_reader_open": (c_int, [P, c_char_p, POINTER(P)]),
    "es_row_reader_free": (None, [P]),
    "es_row_reader_format": (c_char_p, [P]),
    "es_row_reader_count": (c_int, [P, P, POINTER(c_uint64)]),
    "es_row_reader_column_name": (c_char_p, [P, c_size_t]),
    "es_row_reader_read": (c_int, [P, P, POINTER(c_uint64), c_size_t, STRS, c_size_t,
                                   POINTER(POINTER(Row))]),
    # text tokens (es_tokenizer_*)
    "es_tokenizer_load": (c_int, [P, c_char_p, c_char_p, POINTER(c_void_p)]),
    "es_tokenizer_free": (None, [P]),
    "es_tokenizer_encode": (c_int, [P, P, c_char_p, c_size_t, POINTER(POINTER(c_uint32)),
                                    POINTER(c_size_t)]),
    "es_tokenizer_get_info": (c_int, [P, POINTER(TokenizerInfo)]),
    "es_tokenizer_load_symbols": (c_int, [P, c_char_p, c_char_p, c_int, POINTER(c_void_p)]),
    "es_simulate_step_time_info": (c_int, [P, c_size_t, POINTER(SimulateStepTime),
                                           POINTER(c_double)]),
    "es_calibrate_defaults": (None, [POINTER(CalibrateSettings)]),
    "es_calibrate": (c_int, [P, POINTER(CalibrateSettings), P, STRS, c_size_t, POINTER(P)]),
    "es_calibration_free": (None, [P]),
    "es_calibration_get_info": (c_int, [P, POINTER(CalibrationInfo)]),
    "es_calibration_term_info": (c_int, [P, c_int, POINTER(CalibrationTerm)]),
    "es_calibration_write_json": (c_int, [P, P, c_char_p, STRS, c_size_t]),
    "es_cost_model_read": (c_int, [P, c_char_p, POINTER(CostModel)]),
}

ALL_WORKERS = 0xFFFFFFFF  # ES_PLAN_ALL_WORKERS
ENUM_FILTER_REASON = 9  # ES_ENUM_FILTER_REASON
ENUM_COST_TERM = 10  # ES_ENUM_COST_TERM
NO_ROW = ctypes.c_size_t(-1).value  # ES_NO_ROW

_here = os.path.dirname(os.path.abspath(__file__))
# the wheel (pyproject.toml) installs the library beside this file
BUNDLED_LIB = os.path.join(_here, "libequishard.so")
# python/equishard/ in a checkout: the library meson builds in build/src/
BUILD_TREE_LIB = os.path.join(_here, "..", "..", "build", "src", "libequishard.so")


def candidates():
    """Where lib() looks, in order: the library the wheel installed beside this
    file; else $EQUISHARD_LIB (or $EQUISHARD_LIBRARY); else the build tree beside a
    checkout's python/ folder, then the installed library (ld.so.cache).

    The bundled library comes first because it was built from the same sources
    as the structures above: another build's could lay them out differently. The
    variables are for running from a checkout (the tests point them at a build)."""
    if os.path.exists(BUNDLED_LIB):
        return [BUNDLED_LIB]
    env = os.environ.get("EQUISHARD_LIB") or os.environ.get("EQUISHARD_LIBRARY")
    if env:
        return [env]  # explicit: no silent fallback to another build
    found = [os.path.normpath(BUILD_TREE_LIB)] if os.path.exists(BUILD_TREE_LIB) else []
    return found + [ctypes.util.find_library("equishard") or "libequishard.so.0"]


_lib = None


def lib():
    """The loaded library with every prototype declared (loaded once)."""
    global _lib
    if _lib is None:
        errors = []
        for path in candidates():
            try:
                handle = ctypes.CDLL(path)  # CDLL: the GIL is released around each call
                break
            except OSError as e:
                errors.append(str(e))
        else:
            raise ImportError("equishard: cannot load libequishard (set EQUISHARD_LIB to "
                              "its path): " + "; ".join(errors))
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(handle, name)
            fn.restype, fn.argtypes = restype, argtypes
        _lib = handle
    return _lib
