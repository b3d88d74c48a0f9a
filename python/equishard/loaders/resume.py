"""Where a batch plan's epoch starts: resuming at a step, and the step count after it.

A batch plan fixes every step's batches, so an epoch interrupted after step s
(a preempted job, a restart on fewer GPUs) goes on at step s exactly: the
Datasets' `set_epoch(e, step=s)` skips the first s planned steps without
reading a row (PlanDir.epoch_batches). Three ways to say where:

- `dataset.set_epoch(e, step=s)`, for a trainer that knows;
- `dataset.load_state_dict(d)` with what `dataset.state_dict()` returned
  ({"epoch", "step"}), for a trainer that checkpoints its loader;
- EQUISHARD_RESUME=E:S in the environment, for a trainer that cannot be
  changed (CosyVoice's bin/train.py). S is the number of batches every rank
  trained of epoch E (all ranks train the same count in a batch plan).

The last two are *pending*: the next set_epoch(x) trains epoch E from step S,
whatever x is, and later set_epoch(x + k) train epoch E + k. So CosyVoice's
train.py, which restarts at its checkpoint's epoch + 1, trains the rest of
epoch E first and then the epochs the uninterrupted run would have trained,
each one number later than train.py counts them (raise its max_epoch by one
to train as many epochs as the uninterrupted run).

A checkpoint's .yaml is not accepted in place of E:S: CosyVoice's `step`
there counts optimizer steps of all epochs (divided by accum_grad) and its
`batch_idx` is the cross-validation loop's by the time the file is written, so
neither is the in-epoch step a plan needs.

The training process also keeps the position for equal_steps and the step
log (both run there; the Datasets' set_epoch is called there too): equal_steps
.steps and the step log's `step` go on from S, and state_dict()'s step is S
plus the batches they handed out since.
"""
import logging
import os

RESUME_ENV = "EQUISHARD_RESUME"


class ForwardsEpoch:
    """For a pipeline stage over `self.source` (CosyVoice's Processor, WeNet's
    Pipeline): set_epoch, state_dict and load_state_dict are the source's.
    step is passed on only when given, so a source without resuming (the
    recipe's own DataList) keeps working."""

    def set_epoch(self, epoch, step=0):
        if step:
            self.source.set_epoch(epoch, step=step)
        else:
            self.source.set_epoch(epoch)

    def state_dict(self):
        return self.source.state_dict()

    def load_state_dict(self, state):
        self.source.load_state_dict(state)

_log = logging.getLogger("equishard")

# the training process's position: the epoch set last, the step it started at,
# and the batches equal_steps / step_log handed out since
_POSITION = {"epoch": None, "first": 0, "done": 0}


def parse(text, where=RESUME_ENV):
    """"E:S" -> (E, S), both whole numbers >= 0; anything else is a ValueError
    naming `where`."""
    parts = str(text).strip().split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        epoch, step = int(parts[0]), int(parts[1])
        if epoch < 0 or step < 0:
            raise ValueError
    except ValueError:
        raise ValueError(f"{where}={text!r}: expected EPOCH:STEP, two whole numbers >= 0 (the "
                         "epoch to resume and the batches every rank trained of it)") from None
    return epoch, step


class Resume:
    """The epoch and step a Dataset's next set_epoch starts at (see the module doc)."""

    def __init__(self):
        self.pending = None  # (E, S) from load_state_dict or $EQUISHARD_RESUME
        self.offset = 0      # data epoch - set_epoch's number, after a pending resume
        self.used_env = False
        self.epoch, self.step = -1, 0

    def load(self, state):
        if not isinstance(state, dict) or "epoch" not in state:
            raise ValueError(f"load_state_dict: expected {{'epoch': E, 'step': S}}, got {state!r}")
        self.pending = parse(f"{state['epoch']}:{state.get('step', 0)}", "load_state_dict")

    def set_epoch(self, epoch, step=0):
        """The (epoch, step) set_epoch(epoch, step) trains; notes it as the
        training process's position."""
        if not self.used_env:
            self.used_env = True
            text = os.environ.get(RESUME_ENV)
            if text and self.pending is None:
                self.pending = parse(text)
        if self.pending is not None and epoch >= 0:
            e, s = self.pending
            self.pending = None
            if step:
                raise ValueError(f"set_epoch({epoch}, step={step}): a resume at epoch {e}, step {s} "
                                 f"is pending (${RESUME_ENV} or load_state_dict): give one")
            self.offset = e - epoch
            _log.warning("equishard: resuming epoch %d at step %d (set_epoch(%d)%s)", e, s, epoch,
                         "" if e == epoch else f"; set_epoch(n) trains epoch n{self.offset:+d} from now on")
            epoch, step = e, s
        elif epoch >= 0:
            epoch += self.offset
        self.epoch, self.step = epoch, step
        _POSITION.update(epoch=epoch, first=step, done=0)
        return epoch, step

    def state_dict(self):
        """{"epoch", "step"}: the epoch set last and the step training reached in
        it (its first step plus the batches equal_steps or step_log handed out
        since, in this process)."""
        done = _POSITION["done"] if _POSITION["epoch"] == self.epoch else 0
        return {"epoch": self.epoch, "step": self.step + done}


def first_step():
    """The step the epoch set last starts at (0 unless resumed), for equal_steps
    and the step log."""
    return _POSITION["first"]


def current_epoch():
    return _POSITION["epoch"]


def count_step():
    _POSITION["done"] += 1


def reset():
    """Forgets the training process's position (no epoch set; tests)."""
    _POSITION.update(epoch=None, first=0, done=0)
