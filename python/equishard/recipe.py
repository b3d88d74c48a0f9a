"""equishard.Recipe: the training recipe's own yaml (es_recipe_*), for the
`recipe=` argument of measure, load, plan, simulate and validate (the CLI's
`--recipe FILE`; docs/PLAN.md, "--recipe").

    r = equishard.Recipe("conf/cosyvoice2.yaml", sets={"qwen_pretrain_path": "CosyVoice-BlankEN"})
    r.info.loader, r.info.model.max_length, r.info.max_frames_in_batch
    with equishard.plan("data/train/data.list", world_size=8, workers=4, mode="batch",
                        recipe=r) as p: ...

Keyword settings given with it override the recipe's, as flags do.
"""
import os
from ctypes import byref, c_void_p

from . import _args, _ffi
from ._ffi import lib
from .core import ENUMS, _Context, _Handle, _record, _str, _strings, _values

RecipeInfo = _record("RecipeInfo", _ffi.RecipeInfo, extra=("loader_name",))


class Recipe(_Handle):
    """es_recipe_read(path, sets): `sets` is a dict {name: value} or a list of
    "NAME=VALUE" (top-level values, as the training script overrides them).
    `.info` (RecipeInfo: the es_recipe_info fields, strings decoded,
    `loader_name`), `.path`. Plans made with it keep it alive."""
    _free = "es_recipe_free"

    def __init__(self, path, sets=None):
        super().__init__(None)
        if isinstance(sets, dict):
            sets = [f"{k}={v}" for k, v in sets.items()]
        b = _args.path("Recipe: path", path)
        self.path = os.fsdecode(b)
        arr, n = _strings(sets or [], "Recipe: sets")
        out = c_void_p()
        with _Context() as ctx:
            ctx.check(lib().es_recipe_read(ctx.ptr, b, arr, n, byref(out)))
        self._ptr = out.value
        info = _ffi.RecipeInfo()
        lib().es_recipe_get_info(self._ptr, byref(info))
        values = _values(info, loader_name=ENUMS.name("loader", info.loader))
        values["model"] = _record("CostModel", _ffi.CostModel)(**_values(info.model))
        self.info = RecipeInfo(**values)


def as_recipe(recipe):
    """A Recipe from recipe= (a Recipe, or a path), or None."""
    if recipe is None or isinstance(recipe, Recipe):
        return recipe
    return Recipe(recipe)


def loader_of(recipe, loader):
    """The loader name: the recipe's; a `loader` naming another is an error."""
    if recipe is None:
        return loader or "cosyvoice"
    if loader is not None and loader != recipe.info.loader_name:
        raise ValueError(f"loader={loader!r}, but {recipe.path} is a {recipe.info.loader_name} recipe")
    return recipe.info.loader_name


def tokenizer_for(recipe, inputs, tokenizer):
    """The tokenizer to measure `inputs` with: `tokenizer` when given; else the
    recipe's when an input is to be measured (not a cost table), as the CLI
    chooses; ValueError when the recipe leaves its path to the training script."""
    if recipe is None or tokenizer is not None:
        return tokenizer
    if all(lib().es_is_cost_table(_args.path("recipe: inputs", i)) for i in inputs):
        return None
    info = recipe.info
    if info.tokenizer_unresolved:
        raise ValueError(info.tokenizer_note)
    from .text import Tokenizer
    if info.tokenizer:
        return Tokenizer(info.tokenizer, specials=info.specials)
    if info.symbol_table:
        return Tokenizer(symbol_table=info.symbol_table, non_lang_syms=info.non_lang_syms,
                         split_with_space=bool(info.split_with_space))
    return None


_SETTINGS_ARG = ("plan", "simulate", "validate_data")  # es_recipe_settings' plan, sim, data


def apply(recipe, fn, settings):
    """es_recipe_settings(recipe, ...) with settings as its `fn` argument ("plan",
    "simulate" or "validate_data"), when there is a recipe."""
    if recipe is not None:
        args = [None] * len(_SETTINGS_ARG)
        args[_SETTINGS_ARG.index(fn)] = byref(settings)
        with recipe._use() as r:
            lib().es_recipe_settings(r, *args)
    return settings


__all__ = ["Recipe", "RecipeInfo"]
