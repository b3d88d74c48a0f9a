"""Stand-in (README.md): imported by WeNet's train_utils, unused under torch_ddp."""


def convert_zero_checkpoint_to_fp32_state_dict(*args, **kwargs):
    raise RuntimeError("deepspeed stand-in")
