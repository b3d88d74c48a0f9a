"""What equishard.loaders' step log costs a training step.

Iterates N fake CosyVoice batches (16 keys, padded shapes of three tensors)
through a plain loop and through step_log / equal_steps with
EQUISHARD_STEP_LOG set, and prints the time per step each adds. The log's cost
is per step, not per utterance or frame: compare it with a real step (tens to
hundreds of ms on a GPU). usage: PYTHONPATH=python python3 tools/bench/bench_step_log.py [N]
"""
import os
import sys
import tempfile
import time

from equishard import loaders


class Shape:
    def __init__(self, *shape):
        self.shape = shape


def batches(n):
    keys = [f"utt{i:06d}" for i in range(16)]
    batch = {"utts": keys, "speech_feat": Shape(16, 480, 80), "text_token": Shape(16, 60),
             "speech_token": Shape(16, 240), "embedding": Shape(16, 192)}
    return [batch] * n


def per_step(make, n, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        data = batches(n)
        start = time.perf_counter()
        for _ in make(data):
            pass
        best = min(best, (time.perf_counter() - start) / n)
    return best


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    with tempfile.TemporaryDirectory() as tmp:
        plain = per_step(lambda d: d, n)
        os.environ["EQUISHARD_STEP_LOG"] = os.path.join(tmp, "log")
        logged = per_step(lambda d: loaders.step_log(d), n)
        steps = per_step(lambda d: loaders.equal_steps(d), n)  # no torch.distributed: one rank
        loaders.step_log_module.close_all()
        size = sum(os.path.getsize(os.path.join(tmp, "log", f)) for f in os.listdir(os.path.join(tmp, "log")))
    lines = 5 * n * 2
    print(f"{n} steps: plain loop {plain * 1e6:.2f} us/step; step_log +{(logged - plain) * 1e6:.1f} us/step; "
          f"equal_steps (logging) +{(steps - plain) * 1e6:.1f} us/step; {size / lines:.0f} bytes a line")
    for step_ms in (10, 100):
        print(f"  against a {step_ms} ms step: {100 * (logged - plain) / (step_ms / 1000):.3f} % (step_log)")


if __name__ == "__main__":
    main()
