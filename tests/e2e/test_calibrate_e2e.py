"""Equal time, not just equal frames (calibration), end to end with real torch.

1. The corpus of test_cosyvoice_e2e.py at twice its size (uneven CosyVoice parquet files), a batch
   plan balanced on frames only (the default cost model);
2. 2 ranks launched as torchrun does (calib_trainer.py: CosyVoice's pipeline
   behind equishard.loaders.cosyvoice.Dataset, a model whose step costs about
   B × T² of the padded batch), 2 epochs, every step logged by equal_steps
   (EQUISHARD_STEP_LOG);
3. `equishard calibrate` over those logs (their cpu_seconds: the ranks' own
   compute, steady on a shared machine) and the plan's costs.tsv.zst;
4. the same data re-planned with the fitted model (`plan --cost-model`), and
   trained and logged again.

Asserts: calibrate finds the quadratic term and predicts held-out steps within
25 % (median); plan.json records the model's path and digest; the mean
per-step straggler (max/mean step time over the ranks, warm-up steps left
out) is lower with the fitted model than with frames only. Prints both and the
drop (cpu and wall clock); writes build/e2e-calibrate.md.

SKIP (exit 77) as test_cosyvoice_e2e.py does.
"""
import collections
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cosyvoice_e2e import (BUILD, CLI, HERE, NODE_MODULES, RECIPE, SRC,  # noqa: E402
                                install, launch, require, run)

WORLD, WORKERS, EPOCHS, WARMUP = 2, 1, 2, 3
# text tokens counted one a code point (a symbol table of <blank> and <unk> only),
# as calib_trainer.py's CharTokenizer stand-in makes them: the recipe's filter drops on them
CHAR_UNITS = os.path.join(SRC, "tests", "data", "char_units.txt")
PLAN_ARGS = ["--world-size", str(WORLD), "--workers", str(WORKERS), "--max-length", "6000",
             "--mode", "batch", "--symbol-table", CHAR_UNITS]


def read_steps(folder):
    steps = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as f:
            steps += [json.loads(line) for line in f if line.strip()]
    return steps


def straggler(steps, field):
    """Mean over steps (all ranks logged, past the warm-up) of max/mean step time."""
    by_step = collections.defaultdict(dict)
    for s in steps:
        by_step[s["step"]][s["rank"]] = s[field]
    ratios = [max(t.values()) / statistics.mean(t.values())
              for step, t in sorted(by_step.items()) if step >= WARMUP and len(t) == WORLD]
    return statistics.mean(ratios), len(ratios)


def train(py, work, name, plan, data_list):
    log = os.path.join(work, "steps-" + name)
    launch(py, work, name, "calib_trainer.py",
           ["--recipe", RECIPE, "--data-list", data_list, "--epochs", str(EPOCHS),
            "--num-workers", str(WORKERS), "--step-log", log], plan=plan, world=WORLD)
    return log, read_steps(log)


def main():
    require(RECIPE, "CosyVoice")
    work = tempfile.mkdtemp(prefix="e2e-calibrate-", dir=BUILD)
    py = install(work)
    corpus = os.path.join(work, "corpus")
    run([sys.executable, os.path.join(HERE, "make_corpus.py"), corpus, NODE_MODULES, "--scale", "2"])
    data_list = os.path.join(corpus, "parquet", "data.list")

    frames_plan = os.path.join(work, "plan-frames")
    run([CLI, "plan", *PLAN_ARGS, "-o", frames_plan, data_list])
    frames_log, frames_steps = train(py, work, "frames", frames_plan, data_list)

    model = os.path.join(work, "model.json")
    report = run([CLI, "calibrate", "--steps", frames_log, "--time-field", "cpu_seconds",
                  os.path.join(frames_plan, "costs.tsv.zst"), "-o", model])
    print(report)
    with open(model) as f:
        fit = json.load(f)
    assert fit["weights"]["w_frames_sq"] > 0, f"no quadratic term found: {fit['weights']}"
    assert fit["fit"]["held_out_median_error"] < 0.25, fit["fit"]

    fitted_plan = os.path.join(work, "plan-fitted")
    run([CLI, "plan", *PLAN_ARGS, "--cost-model", model, "-o", fitted_plan, data_list])
    with open(os.path.join(fitted_plan, "plan.json")) as f:
        source = json.load(f)["parameters"]["cost_model"]["source"]
    assert source["path"] == model and source["digest"].startswith("xxh3-64:"), source
    fitted_log, fitted_steps = train(py, work, "fitted", fitted_plan, data_list)

    rows = ["| plan | steps per rank | mean step straggler, cpu (max/mean) | wall clock |",
            "|---|---|---|---|"]
    result = {}
    for name, steps in (("frames only (default model)", frames_steps),
                        ("calibrated model.json", fitted_steps)):
        cpu, n = straggler(steps, "cpu_seconds")
        wall, _ = straggler(steps, "seconds")
        result[name] = (cpu, wall)
        rows.append(f"| {name} | {n + WARMUP} | {cpu:.3f} | {wall:.3f} |")
    (cpu0, wall0), (cpu1, wall1) = result.values()
    rows.append(f"\nstraggler excess (max/mean − 1) drops by {100 * (1 - (cpu1 - 1) / (cpu0 - 1)):.0f} % "
                f"(cpu; wall clock {100 * (1 - (wall1 - 1) / max(wall0 - 1, 1e-9)):.0f} %); fit: "
                f"held-out median error {100 * fit['fit']['held_out_median_error']:.1f} %, "
                f"R² {fit['fit']['r2_held_out']:.3f}")
    table = "\n".join(rows) + "\n"
    with open(os.path.join(BUILD, "e2e-calibrate.md"), "w") as f:
        f.write(table)
    print(table)
    assert cpu1 < cpu0, f"the fitted model did not lower the step straggler: {cpu0:.3f} -> {cpu1:.3f}"
    if not os.environ.get("ES_E2E_KEEP"):  # kept for a look when set
        shutil.rmtree(work)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
