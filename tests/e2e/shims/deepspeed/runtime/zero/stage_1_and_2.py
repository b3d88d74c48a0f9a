"""Stand-in (README.md): imported by train_utils, unused under torch_ddp."""


def estimate_zero2_model_states_mem_needs_all_live(*args, **kwargs):
    raise RuntimeError("deepspeed stand-in")
