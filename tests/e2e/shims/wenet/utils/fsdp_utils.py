"""Stand-in (README.md): train_utils imports these; the tests train with torch_ddp."""


def _unused(*args, **kwargs):
    raise RuntimeError("fsdp stand-in: the tests train with torch_ddp")


apply_fsdp_checkpointing = check_gradient_checkpoint = fsdp_save_model = _unused
wenet_fsdp_wrap_policy = _unused
