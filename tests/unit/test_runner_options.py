"""What a job's second attempt asks of its backend."""

from __future__ import annotations

from app.engine.runner import JobRunner
from app.jobs import Job
from backends.core.base import TransferOptions


def runner(**options) -> JobRunner:
    job = Job(id=1, source="sftp://u@h/run42", dest="/tmp/x", backend="ssh",
              options=TransferOptions(streams=4, **options))
    return JobRunner(None, job, job.source, job.dest)


def test_a_first_attempt_asks_exactly_what_the_user_asked():
    assert runner()._options().sync is None


def test_a_retried_or_resumed_job_keeps_what_its_earlier_attempt_wrote():
    retried = runner()
    retried.retries = 1
    assert retried._options().sync == "size-mtime"
    resumed = runner()
    resumed.job.bytes_done = 123  # paused, restarted or retried by the user after it had moved bytes
    assert resumed._options().sync == "size-mtime"
    assert resumed.job.options.sync is None  # the stored job is unchanged


def test_overwrite_and_an_explicit_sync_stay_as_asked():
    over = runner(overwrite=True)
    over.retries = 1
    assert over._options().sync is None and over._options().overwrite
    checksum = runner(sync="checksum")
    checksum.job.bytes_done = 5
    assert checksum._options().sync == "checksum"


def test_a_stored_job_keeps_pack_and_unpack():
    """A queued --pack or --unpack job read back after a restart (the store keeps ``to_dict``) is still one: a
    --pack that came back as a plain folder copy would send thousands of files instead of one archive."""
    for asked in ({"pack": True}, {"unpack": True}, {}):
        back = TransferOptions.from_dict(TransferOptions(**asked).to_dict())
        assert (back.pack, back.unpack) == (asked.get("pack", False), asked.get("unpack", False))
