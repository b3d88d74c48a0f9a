"""WeNet's own training loop on equishard's plans, with real torch.

The user's experience, end to end, on a corpus this test makes (uneven
utterances in uneven WeNet tar shards, written with Python's tarfile and wave):

1. the wheel (tools/wheel.sh) pip-installed into a venv of the interpreter
   that has torch (Debian's python3-torch), `import equishard` from there;
2. README.md's `sh wenet` block run as written (bash, set -euo pipefail) in a
   scratch WeNet checkout (examples/aishell/s0: conf/train_conformer.yaml,
   upstream's; data/train/data.list, this corpus's shards; data/dict/lang_char.txt,
   the character table the yaml's tokenizer_conf names, made as the recipe's
   run.sh makes it) with the venv's `equishard` on PATH: it must exit 0 and
   write the files it names; its exp/plan is the batch plan trained below, with
   the yaml's dataset_conf and WeNet's own CharTokenizer on lang_char.txt.
   The other plans are made with the CLI and the test's dataset_conf (CONF:
   `--frame-rate 100`, fbank at a 10 ms shift, and its filter_conf and
   batch_conf);
3. 4 ranks launched as torchrun launches them (python -m torch.distributed.run),
   2 persistent DataLoader workers each, gloo, WeNet's recipe loop
   (wenet_trainer.py: init_dataset_and_dataloader, Executor.train inside DDP's
   model.join(), wenet_join), 2 epochs, for each variant:

   own (ddp)      WeNet's Dataset on its data.list, torch_ddp: wenet_join is a
                  no-op, DDP's model.join() absorbs the uneven ranks
   own (barrier)  the same, wenet_join as under deepspeed: monitored_barrier on
                  group_join with a 5 s timeout            (the problem)
   batch          equishard.loaders.wenet.Dataset, the README's plan, the
                  yaml's dataset_conf (the changed import)
   shard          equishard's Dataset, shard plan (ShardList), + equal_steps
   raw batch      the same utterances as a raw list (data_type "raw"), batch plan
   raw shard      the raw list, shard plan, + equal_steps

and, for the table only, the shard plan without equal_steps. It asserts: the
recipe's own list fails the barrier and skips data, and under torch_ddp leaves
the ranks' step counts apart (so this test can fail); batch mode never fails the
barrier, every rank trains the planned steps, every kept utterance once per
epoch (a padding repeat aside) and epoch 1 trains other batches than epoch 0;
shard with equal_steps never fails the barrier and all ranks stop together.
The measured table is written to build/e2e-wenet.md.

SKIP (exit 77) without ../shared/third_party/wenet or without torch/torchaudio
for ES_TORCH_PYTHON (default /usr/bin/python3).
"""
import json
import os
import shutil
import sys
import tempfile

from test_cosyvoice_e2e import BUILD, CLI, SRC, install, launch, readme_block, require, run
from test_cosyvoice_e2e import epoch_view as shared_epoch_view

RECIPE = os.path.normpath(os.path.join(SRC, "..", "shared", "third_party", "wenet"))
HERE = os.path.dirname(os.path.abspath(__file__))
YAML = os.path.join(RECIPE, "examples", "aishell", "s0", "conf", "train_conformer.yaml")
WORLD, WORKERS, EPOCHS, TIMEOUT = 4, 2, 2, 5  # the README block's 4 ranks x 2 workers
MAX_FRAMES = 4000
# the own and shard variants' dataset_conf (aishell's layout; speed_perturb off,
# dynamic batches, short utterances filtered: the recipe's split is then uneven)
CONF = {
    "filter_conf": {"max_length": 1000, "min_length": 50, "token_max_length": 200, "token_min_length": 1},
    "resample_conf": {"resample_rate": 16000},
    "speed_perturb": False,
    "fbank_conf": {"num_mel_bins": 80, "frame_shift": 10, "frame_length": 25, "dither": 0.1},
    "spec_aug": True, "spec_aug_conf": {"num_t_mask": 2, "num_f_mask": 2, "max_t": 50, "max_f": 10},
    "shuffle": True, "shuffle_conf": {"shuffle_size": 1500},
    "sort": True, "sort_conf": {"sort_size": 500},
    "batch_conf": {"batch_type": "dynamic", "max_frames_in_batch": MAX_FRAMES},
}
PLAN_ARGS = ["--world-size", str(WORLD), "--workers", str(WORKERS), "--frame-rate", "100",
             "--min-length", "50", "--max-length", "1000", "--max-frames-in-batch", str(MAX_FRAMES)]


def train(py, work, corpus, name, join, dataset="wenet", plan=None, equal_steps=False,
          data_type="shard", data_list=None, units=None, conf=None):
    data_list = data_list or os.path.join(corpus, "data.list" if data_type == "shard" else "raw.list")
    args = ["--recipe", RECIPE, "--data-list", data_list, "--data-type", data_type,
            "--units", units or os.path.join(corpus, "units.txt"),
            "--conf", conf or os.path.join(work, "conf.json"),
            "--dataset", dataset, "--join", join, "--epochs", str(EPOCHS), "--timeout", str(TIMEOUT),
            "--num-workers", str(WORKERS)]
    return launch(py, work, name, "wenet_trainer.py", args + (["--equal-steps"] if equal_steps else []),
                  plan=plan, timeout=300, world=WORLD)


def recipe_folder(work, corpus):
    """A WeNet checkout as the README block expects it: examples/aishell/s0 with
    conf/train_conformer.yaml (upstream's), data/train/data.list (this corpus's
    shards) and data/dict/lang_char.txt, the symbol table its tokenizer_conf
    names: <blank> 0, <unk> 1, the corpus's characters, <sos/eos> last, as the
    recipe's run.sh writes it (make_wenet_corpus.py's units.txt)."""
    folder = os.path.join(work, "wenet", "examples", "aishell", "s0")
    for d in ("conf", os.path.join("data", "train"), os.path.join("data", "dict")):
        os.makedirs(os.path.join(folder, d))
    shutil.copy(YAML, os.path.join(folder, "conf", "train_conformer.yaml"))
    shutil.copy(os.path.join(corpus, "data.list"), os.path.join(folder, "data", "train", "data.list"))
    shutil.copy(os.path.join(corpus, "units.txt"), os.path.join(folder, "data", "dict", "lang_char.txt"))
    return folder


# processor.filter's defaults, for the keys a filter_conf leaves out
FILTER_DEFAULTS = {"max_length": 10240, "min_length": 10, "token_max_length": 200, "token_min_length": 1,
                   "min_output_input_ratio": 0.0005, "max_output_input_ratio": 1}


def recipe_kept(truth, filter_conf, table):
    """The keys WeNet's processor.filter keeps under `filter_conf` (the yaml's),
    computed here from the corpus's numbers: frames at 100 a second, labels the
    CharTokenizer ids of the transcript (one a character; a space is '▁')."""
    conf = {**FILTER_DEFAULTS, **filter_conf}
    with open(table, encoding="utf8") as f:
        symbols = {line.split()[0] for line in f if line.strip()}
    kept = set()
    for t in truth:
        frames = t["samples"] / 16000 * 100
        labels = sum(1 for c in t["text"] if ("▁" if c == " " else c) in symbols or "<unk>" in symbols)
        if not conf["min_length"] <= frames <= conf["max_length"]:
            continue
        if not conf["token_min_length"] <= labels <= conf["token_max_length"]:
            continue
        if frames and not conf["min_output_input_ratio"] <= labels / frames <= conf["max_output_input_ratio"]:
            continue
        kept.add(t["key"])
    return kept


def epoch_view(ranks, e, kept):
    # the longest wait: in the join, or idle at the epoch's end inside model.join()
    return shared_epoch_view(ranks, e, kept, waits=("join_seconds_max", "tail_wait"))


def main():
    require(RECIPE, "WeNet", parquet=False)  # its corpus is tar shards made with tarfile
    work = tempfile.mkdtemp(prefix="e2e-wenet-", dir=BUILD)
    py = install(work)
    corpus = os.path.join(work, "corpus")
    run([sys.executable, os.path.join(HERE, "make_wenet_corpus.py"), corpus])
    with open(os.path.join(corpus, "truth.json")) as f:
        truth = json.load(f)
    kept = {t["key"] for t in truth if t["kept"]}
    with open(os.path.join(work, "conf.json"), "w") as f:
        json.dump(CONF, f)
    data_list = os.path.join(corpus, "data.list")
    folder = recipe_folder(work, corpus)
    readme_block("wenet", folder, py)  # measure, plan --mode batch -o exp/plan
    # the yaml as WeNet's train.py reads it (yaml.load), in the interpreter that trains
    recipe_conf = json.loads(run([py, "-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load("
                                  "open(sys.argv[1]))['dataset_conf']))",
                                  os.path.join(folder, "conf", "train_conformer.yaml")]))
    with open(os.path.join(work, "recipe-conf.json"), "w") as f:
        json.dump(recipe_conf, f)
    lang_char = os.path.join(folder, "data", "dict", "lang_char.txt")
    kept_recipe = recipe_kept(truth, recipe_conf["filter_conf"], lang_char)
    plans = {"batch": os.path.join(folder, "exp", "plan")}
    units = ["--symbol-table", os.path.join(corpus, "units.txt")]  # the labels the filter counts
    plans["shard"] = os.path.join(work, "shard")
    run([CLI, "plan", "-q", *PLAN_ARGS, *units, "--mode", "shard", "-o", plans["shard"], data_list])
    for mode in ("batch", "shard"):
        plans["raw " + mode] = os.path.join(work, "raw-" + mode)
        run([CLI, "plan", "-q", *PLAN_ARGS, *units, "--mode", mode, "-o", plans["raw " + mode],
             os.path.join(corpus, "raw.list")])
    kept_of = {"batch": kept_recipe}  # what each batch plan's filter keeps
    for name in ("batch", "raw batch"):
        with open(os.path.join(plans[name], "plan.json")) as f:
            plan = json.load(f)
        want = kept_of.get(name, kept)
        assert plan["metrics"]["kept"] == len(want), (name, plan["metrics"]["kept"], len(want))
        assert (plan["parameters"]["world_size"], plan["parameters"]["workers"]) == (WORLD, WORKERS)

    runs = {
        "WeNet's own data.list, torch_ddp (`model.join()`)": train(py, work, corpus, "own-ddp", "ddp"),
        "WeNet's own data.list, `wenet_join` barrier (as under deepspeed)": train(
            py, work, corpus, "own-barrier", "barrier"),
        "README's plan --mode batch + equishard.loaders.wenet.Dataset, the yaml's dataset_conf": train(
            py, work, corpus, "batch", "barrier", dataset="equishard", plan=plans["batch"],
            data_list=os.path.join(folder, "data", "train", "data.list"), units=lang_char,
            conf=os.path.join(work, "recipe-conf.json")),
        "plan --mode shard + Dataset (ShardList) + equal_steps": train(
            py, work, corpus, "shard", "barrier", dataset="equishard", plan=plans["shard"], equal_steps=True),
        "raw list: plan --mode batch + Dataset": train(
            py, work, corpus, "raw-batch", "barrier", dataset="equishard", plan=plans["raw batch"],
            data_type="raw"),
        "raw list: plan --mode shard + Dataset + equal_steps": train(
            py, work, corpus, "raw-shard", "barrier", dataset="equishard", plan=plans["raw shard"],
            equal_steps=True, data_type="raw"),
        # for comparison, not asserted: the shard plan without equal_steps
        "plan --mode shard + Dataset, no equal_steps": train(
            py, work, corpus, "shard-alone", "barrier", dataset="equishard", plan=plans["shard"]),
    }
    views = {name: [epoch_view(r, e, kept_recipe if name.startswith("README") else kept)
                    for e in range(EPOCHS)] for name, r in runs.items()}
    table = ["| variant | steps per rank (epoch 0; 1) | barrier failed (epochs) | longest wait in the join, s | kept utterances trained (epoch 0; 1) |",
             "|---|---|---|---|---|"]
    for name, v in views.items():
        barrier = "— (no barrier)" if "torch_ddp" in name else f"{sum(1 for e in v if e['failures'])} of {EPOCHS}"
        table.append(f"| {name} | {' / '.join(map(str, v[0]['steps']))}; {' / '.join(map(str, v[1]['steps']))} "
                     f"| {barrier} | {max(e['wait'] for e in v):.2f} "
                     f"| {v[0]['share']:.1%}; {v[1]['share']:.1%} |")
    report = "\n".join(table) + "\n"
    with open(os.path.join(BUILD, "e2e-wenet.md"), "w") as f:
        f.write(report)
    print(report)

    own_ddp, own_barrier, batch, shard, raw_batch, raw_shard = list(views.values())[:6]
    # the problem is real: WeNet's own split leaves ranks apart (torch_ddp: the
    # ranks that ran dry idle in model.join), fails the barrier and skips data
    assert any(len(set(e["steps"])) > 1 for e in own_ddp), "the recipe's own split gave equal steps"
    assert any(e["failures"] for e in own_barrier), "the recipe's own list never failed the barrier"
    assert any(e["share"] < 1 for e in own_barrier), "the recipe's own list skipped nothing"
    # batch mode: no barrier failure, the planned steps on every rank, every kept
    # utterance once, new batches per epoch
    for name, views_of, outdir in (("batch", batch, plans["batch"]), ("raw batch", raw_batch, plans["raw batch"])):
        want = kept_of.get(name, kept)
        with open(os.path.join(outdir, "plan.json")) as f:
            metrics = json.load(f)["metrics"]
        steps_planned = metrics["steps"]
        for e, view in enumerate(views_of):
            assert view["failures"] == 0, f"{name}, epoch {e}: the barrier failed"
            assert view["steps"] == [steps_planned] * WORLD, (name, e, view["steps"], steps_planned)
            assert set(view["trained"]) == want, f"{name}, epoch {e}: trained {len(view['trained'])} of {len(want)} kept"
            assert max(view["trained"].values()) <= 2, f"{name}, epoch {e}: an utterance trained 3 times"
        # twice only in the remainder's padding repeats (remainder pad, plan.json's epoch)
        assert sum(c - 1 for c in views_of[0]["trained"].values()) == metrics["remainder"]["utterances"]
        assert set(views_of[0]["batches"]) != set(views_of[1]["batches"]), f"{name}: epoch 1 trained epoch 0's batches"
    # shard plans with equal_steps: the barrier never fails, every rank stops together
    for name, views_of in (("shard", shard), ("raw shard", raw_shard)):
        for e, view in enumerate(views_of):
            assert view["failures"] == 0, f"{name}, epoch {e}: the barrier failed"
            assert len(set(view["steps"])) == 1, f"{name}, epoch {e}: steps {view['steps']}"
    shutil.rmtree(work)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
