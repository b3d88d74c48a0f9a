"""Stand-in (README.md) for wenet/utils/common.py (left out of the shared copy):
the helpers executor.py and train_utils.py import, as upstream defines them."""
import time

import torch

TORCH_NPU_AVAILABLE = False


def get_nested_attribute(obj, attr_path):
    for attr in attr_path.split("."):
        obj = getattr(obj, attr)
    return obj


def lrs_to_str(lrs):
    return " ".join(["{:.4e}".format(lr) for lr in lrs])


def tensor_to_scalar(x):
    if torch.is_tensor(x):
        return x.item()
    return x


class StepTimer:
    """Steps per second between calls, as upstream's."""

    def __init__(self, step=0.0):
        self.last_iteration = step
        self.start()

    def start(self):
        self.last_time = time.time()

    def steps_per_second(self, cur_step):
        value = (float(cur_step) - self.last_iteration) / (time.time() - self.last_time)
        self.start()
        self.last_iteration = float(cur_step)
        return value
