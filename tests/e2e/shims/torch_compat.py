"""Stand-ins (README.md) for two torch modules WeNet imports that Debian's torch
1.13 on Python 3.11 lacks or cannot import; install() puts them in sys.modules
(torch is a regular package: a folder here could not extend it).

- torch.utils.data.datapipes.iter.sharding (torch 2.0): datapipes.py's
  ShardDataPipe subclasses its ShardingFilterIterDataPipe(source, sharding_group_filter)
  and overrides apply_sharding(n, id, sharding_group). Here: torch 1.13's
  ShardingFilterIterDataPipe (same filter: element i to instance i % n) with
  2.0's signatures, and a subclass's apply_sharding called by 1.13's DataLoader
  with two arguments gets sharding_group=DEFAULT.
- torch.distributed.fsdp: importing it fails on Python 3.11 (a dataclass with a
  mutable default in torch 1.13); train_utils imports names from it, used only
  under torch_fsdp.
"""
import enum
import functools
import sys
import types


def install():
    from torch.utils.data.datapipes.iter import grouping

    class SHARDING_PRIORITIES(enum.IntEnum):
        DEFAULT = 1
        DISTRIBUTED = 2
        MULTIPROCESSING = 3

    class ShardingFilterIterDataPipe(grouping.ShardingFilterIterDataPipe):
        def __init__(self, source_datapipe, sharding_group_filter=None):
            super().__init__(source_datapipe)
            self.sharding_group_filter = sharding_group_filter

        def apply_sharding(self, num_of_instances, instance_id,
                           sharding_group=SHARDING_PRIORITIES.DEFAULT):
            super().apply_sharding(num_of_instances, instance_id)

        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            own = cls.__dict__.get("apply_sharding")
            if own is not None:
                @functools.wraps(own)
                def apply_sharding(self, num_of_instances, instance_id,
                                   sharding_group=SHARDING_PRIORITIES.DEFAULT):
                    return own(self, num_of_instances, instance_id, sharding_group)
                cls.apply_sharding = apply_sharding

    sharding = types.ModuleType("torch.utils.data.datapipes.iter.sharding")
    sharding.SHARDING_PRIORITIES = SHARDING_PRIORITIES
    sharding.ShardingFilterIterDataPipe = ShardingFilterIterDataPipe
    sys.modules[sharding.__name__] = sharding

    fsdp = types.ModuleType("torch.distributed.fsdp")
    for name in ("CPUOffload", "FullyShardedDataParallel", "MixedPrecision", "ShardingStrategy"):
        setattr(fsdp, name, type(name, (), {}))
    fsdp.sharded_grad_scaler = types.ModuleType("torch.distributed.fsdp.sharded_grad_scaler")
    sys.modules["torch.distributed.fsdp"] = fsdp
    sys.modules["torch.distributed.fsdp.sharded_grad_scaler"] = fsdp.sharded_grad_scaler
