"""Stand-in (README.md): deepspeed is not installable here; the tests train with torch_ddp."""


def init_distributed(*args, **kwargs):
    raise RuntimeError("deepspeed stand-in: the tests train with torch_ddp")
