"""Stand-in (README.md): train_utils imports these schedulers; the tests use a constant rate."""


class WarmupLR:
    pass


class NoamHoldAnnealing:
    pass
