"""Step log: what every step the loader fed cost the trainer, for `equishard calibrate`.

Opt-in: with EQUISHARD_STEP_LOG=DIR set (or step_log(loader, DIR)), every batch
handed to the training loop is logged as one JSON line in
DIR/steps-rank-RRRRR.jsonl (one file per rank, appended to, so several epochs
and restarts add up):

    {"rank": 0, "step": 17, "epoch": 0, "keys": ["utt1", ...], "seconds": 0.231,
     "cpu_seconds": 0.229, "shape": {"speech_feat": [12, 640, 80], ...}}

seconds is the wall time from handing the batch out to the trainer's next
request: the trainer's step (forward, backward, optimizer, and whatever it waits
for in between). It must be measured here, in the training process: batches are
made in DataLoader worker processes, which never see the step. cpu_seconds is
that process's CPU time over the same span (time.process_time), steadier than
the wall clock on a shared machine. shape: the padded tensors' shapes (what the
loader padded to). docs/COST_MODEL.md describes the format; calibrate ignores
keys it does not know, so any trainer may write the same lines itself.

In a synchronous data-parallel trainer (DDP), a step's wall time includes the
wait for the slowest rank's gradients: calibrate from per-rank compute that does
not wait (one rank, or model.no_sync() while logging), see docs/COST_MODEL.md.

Overhead: one json.dumps and one buffered write per step (docs/PERFORMANCE.md).

The folder is often shared (/tmp, a team scratch folder), so the log is written
only into a folder that is the user's alone (or the user's own sticky folder),
and only to a regular file of the user's with no other name: a symbolic link,
FIFO, hard link or another user's file planted at the log's name is refused with
StepLogError before the first step, never written through or waited on
(docs/RELIABILITY.md).
"""
import atexit
import json
import os
import stat
import time

from .resume import count_step, current_epoch, first_step

STEP_LOG_ENV = "EQUISHARD_STEP_LOG"
_KEY_FIELDS = ("utts", "keys", "key")  # CosyVoice's padding, WeNet's, a single sample
_OPEN = {}  # (directory, rank) -> _Writer: one per process, steps counted across epochs


def _keys(batch):
    if isinstance(batch, dict):
        for name in _KEY_FIELDS:
            v = batch.get(name)
            if isinstance(v, (list, tuple)):
                return [str(k) for k in v]
            if isinstance(v, str):
                return [v]
    return None


def _shapes(batch):
    out = {}
    if isinstance(batch, dict):
        for name, v in batch.items():
            shape = getattr(v, "shape", None)
            if shape is not None and len(shape) >= 2:
                out[name] = [int(d) for d in shape]
    return out


class StepLogError(OSError):
    """The step log's folder or file is not one this user alone controls."""


def _own_folder(directory):
    """A descriptor of directory (made 0700 when missing) if it is the user's
    and nobody else can write it, or is the user's own sticky folder."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    st = os.fstat(fd)
    others_write = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if st.st_uid != os.geteuid() or (others_write and not st.st_mode & stat.S_ISVTX):
        os.close(fd)
        whose = "another user's" if st.st_uid != os.geteuid() else "writable by others"
        raise StepLogError(f"{STEP_LOG_ENV}: {directory}: folder is {whose}: refusing to write "
                           "the step log there (use a folder only you can write)")
    return fd


def _append_own_file(directory, name):
    """The log file opened for appending inside directory, never through a link
    or a FIFO, and only when it is a regular file of the user's with one name."""
    path = os.path.join(directory, name)
    folder = _own_folder(directory)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, 0o644, dir_fd=folder)
    except OSError:
        # refused by O_NOFOLLOW (ELOOP), a FIFO without a reader (ENXIO), or the
        # kernel's own protection of sticky folders (EACCES): say what is there
        try:
            st = os.lstat(name, dir_fd=folder)
        except OSError:
            raise StepLogError(f"{path}: cannot open the step log") from None
        why = ("is a symbolic link" if stat.S_ISLNK(st.st_mode) else
               "is a FIFO" if stat.S_ISFIFO(st.st_mode) else
               "is not a regular file" if not stat.S_ISREG(st.st_mode) else
               "belongs to another user" if st.st_uid != os.geteuid() else None)
        if why is None:
            raise
        raise StepLogError(f"{path}: {why}: refusing to write the step log through it "
                           "(remove it, or use a folder only you can write)") from None
    finally:
        os.close(folder)
    st = os.fstat(fd)
    problem = ("is not a regular file" if not stat.S_ISREG(st.st_mode) else
               "belongs to another user" if st.st_uid != os.geteuid() else
               "has another name too (a hard link)" if st.st_nlink != 1 else None)
    if problem:
        os.close(fd)
        raise StepLogError(f"{path}: {problem}: refusing to write the step log to it "
                           "(remove it, or use a folder only you can write)")
    os.set_blocking(fd, True)
    return path, os.fdopen(fd, "a", buffering=1 << 16)


class _Writer:
    def __init__(self, directory, rank):
        self.rank = rank
        self.path, self.file = _append_own_file(directory, f"steps-rank-{rank:05d}.jsonl")
        self.step = 0
        self.epoch = -1

    def write(self, batch, seconds, cpu_seconds):
        keys = _keys(batch)
        if keys is None:  # nothing calibrate could join to the table
            return
        line = {"rank": self.rank, "step": self.step, "epoch": self.epoch, "keys": keys,
                "seconds": seconds, "cpu_seconds": cpu_seconds, "shape": _shapes(batch)}
        self.file.write(json.dumps(line, separators=(",", ":")) + "\n")
        self.step += 1

    def flush(self):
        self.file.flush()


@atexit.register
def close_all():
    """Closes every step log this process opened (at exit, or by hand)."""
    while _OPEN:
        _OPEN.popitem()[1].file.close()


def open_log(directory=None):
    """The writer for this process's rank in `directory` (default
    $EQUISHARD_STEP_LOG), or None when step logging is off."""
    directory = directory or os.environ.get(STEP_LOG_ENV)
    if not directory:
        return None
    from . import distributed_info
    rank, _ = distributed_info()
    key = (os.path.abspath(directory), rank)
    if key not in _OPEN:
        _OPEN[key] = _Writer(directory, rank)
    return _OPEN[key]


def timed(batches, log):
    """Yields `batches` (an iterator), logging each one's step to `log` (a
    writer from open_log); without a log, yields them untouched."""
    if log is None:
        for batch in batches:
            count_step()  # handed out: state_dict() counts it as trained
            yield batch
        return
    # a batch plan's Dataset set the epoch (resume.py): its number, and a resumed
    # epoch's steps go on from where it was interrupted, in a fresh process
    epoch = current_epoch()
    log.epoch = epoch if epoch is not None and epoch > log.epoch else log.epoch + 1
    if log.step == 0:
        log.step = first_step()
    clock, cpu = time.perf_counter, time.process_time
    try:
        for batch in batches:
            count_step()
            t0, c0 = clock(), cpu()
            yield batch
            log.write(batch, clock() - t0, cpu() - c0)
    finally:
        log.flush()


class step_log:
    """Wraps a DataLoader (or any iterable of batches) in the training process
    and logs every step it hands out (see the module's doc). directory: where
    (default $EQUISHARD_STEP_LOG; neither: the loader is passed through)."""

    def __init__(self, loader, directory=None):
        self.loader, self.directory = loader, directory

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        return timed(iter(self.loader), open_log(self.directory))
