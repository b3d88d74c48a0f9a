"""What the loader drop-ins read off a recipe's pipeline stages: their names,
the settings they run with, and whether the filter's are the plan's. Shared by
equishard.loaders.cosyvoice (stages from the yaml) and equishard.loaders.wenet
(stages from dataset_conf)."""
import functools
import inspect
import math

FILTER_KEYS = ("max_length", "min_length", "token_max_length", "token_min_length",
               "min_output_input_ratio", "max_output_input_ratio")


def stage_name(func):
    """The processor function's name under functools.partial (hyperpyyaml's !name:)."""
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", repr(func))


def keyword_defaults(func):
    """A processor function's keyword defaults (settings left out take them)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return {}
    return {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}


def stage_settings(func):
    """The keywords a stage runs with: its function's defaults, overridden by
    those functools.partial bound (the outermost partial wins, as in a call)."""
    bound = {}
    while isinstance(func, functools.partial):
        bound = {**func.keywords, **bound}
        func = func.func
    return {**keyword_defaults(func), **bound}


def replan_hint(plan):
    """How to make a plan that this recipe's loader accepts: `equishard plan
    --recipe` with the running yaml (plan.json's parameters.recipe names the
    one the plan was made from, when it was)."""
    source = f"; the plan was made from {plan.recipe}" if plan.recipe else ""
    return f"plan with --recipe and the recipe's yaml, as training runs it{source}"


def check_filter(plan, settings, what):
    """Refuses filter `settings` (the recipe's `what`) other than those the plan
    was made with: the plan would then not be what the loader trains."""
    for k in FILTER_KEYS:
        got, want = settings.get(k), plan.settings[k]
        if got is None or not math.isclose(float(got), float(want), rel_tol=1e-9):
            raise ValueError(f"{plan.outdir}: the recipe's {what} has {k}={got}, the plan was made "
                             f"with {want} ({replan_hint(plan)}, or its settings: --min-length, "
                             "--max-length, --token-min-length, ...)")


# a token bound that drops nothing: 0 tokens at least, UINT32_MAX at most, ratios 0 .. inf
_NO_BOUND = {"token_min_length": lambda v: v <= 0, "token_max_length": lambda v: v >= 4294967295,
             "min_output_input_ratio": lambda v: v <= 0, "max_output_input_ratio": math.isinf}


def check_token_counts(plan, settings, what, measure_with):
    """Refuses a plan whose rows have no text-token counts (plan.json's
    text_tokens: count "text_tokens", rows_without > 0) when the recipe's
    `what`, run with `settings`, drops utterances on their tokens: the plan
    could not apply those bounds and kept every such utterance, so the recipe's
    filter would empty planned batches mid-epoch and the ranks' steps differ.
    measure_with: the option that counts them (--tokenizer, --symbol-table)."""
    missing = plan.rows_without_tokens
    if plan.token_count != "text_tokens" or not missing:
        return
    active = [f"{k}={settings[k]}" for k, unbounded in _NO_BOUND.items()
              if settings.get(k) is not None and not unbounded(float(settings[k]))]
    if active:
        raise ValueError(f"{plan.outdir}: {missing} utterance(s) have no text-token count in the "
                         f"plan, and the recipe's {what} drops utterances on their tokens "
                         f"({', '.join(active)}): the plan kept them unfiltered (re-measure with "
                         f"--recipe (the training yaml) or {measure_with}, the recipe's "
                         f"tokenizer, and re-plan)")
