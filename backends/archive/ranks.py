"""``labferry pack`` and ``unpack`` under ``mpirun -np N`` or ``srun``: the same commands, over a cluster's nodes.

Rank 0 walks, lays out and finishes, exactly as a run on one machine does; where that run hands batches to
worker processes (``workers.run``), it deals them to every rank instead, itself included, by bytes so the
ranks finish together, and gathers each rank's digests. The other ranks only ``serve``: they take a share,
write or read it at its offsets on the shared file system, and hand back the results, until rank 0 says done.
A rank's failure is one sentence that rank 0 says; nothing hangs waiting for a rank that failed.

The shares go out in ``ROUNDS`` rounds, each gathered before the next: rank 0 learns what every rank wrote as
the job goes, and records it (``resume.Record``). A batch system's SIGTERM at the time limit (or ``scancel``)
then costs the round under way, not the job: the same command, under any number of ranks, goes on from there.
"""

from __future__ import annotations

import os

from ..core.errors import TransferError, Unavailable

#: how many times rank 0 gathers what the ranks did (and can record it) during one ``run``
ROUNDS = 16
#: what the launchers set: Open MPI's mpirun, MPICH's and Slurm's PMI, PMIx (srun --mpi=pmix)
_LAUNCHED = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def launched() -> bool:
    return any(name in os.environ for name in _LAUNCHED)


def bound_to_launcher(rank: int) -> None:
    """A rank blocked in a collective is in MPI's C code, where Python's signal handlers never run: SIGTERM from
    a batch system (Slurm's time limit, ``scancel``) or from ``mpirun`` would be noted and never acted on, and a
    rank whose ``mpirun`` died spun on at full CPU (seen here: two ranks for an hour). So every rank dies with
    its launcher, and the ranks other than 0, which keep nothing, take SIGTERM and Ctrl-C as the kernel does: at
    once. Rank 0 keeps Python's handling, to record what is done and say so (its record is at most a second
    old if it is killed instead)."""
    import signal

    from ..host.procs import die_with_parent

    die_with_parent(signal.SIGKILL)
    if rank > 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def world():
    """The MPI world when this process was started by an MPI launcher with more than one rank, else None."""
    if not launched():
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        raise Unavailable("labferry was started by mpirun or srun, but mpi4py is not installed here: run "
                          "pip install mpi4py (built against the cluster's MPI), or run labferry without mpirun."
                          ) from None
    comm = MPI.COMM_WORLD
    return comm if comm.Get_size() > 1 else None


def deal(batches: list[list], ranks: int, cost) -> list[list[list]]:
    """Batches to ranks, the costliest first each to the rank with the least so far."""
    shares: list[list[list]] = [[] for _ in range(ranks)]
    loads = [0] * ranks
    for batch in sorted(batches, key=lambda b: -cost(b)):
        least = loads.index(min(loads))
        shares[least].append(batch)
        loads[least] += cost(batch)
    return shares


def _run_share(work, common, share: list[list]) -> tuple[list, TransferError | str | None]:
    results = []
    try:
        for batch in share:
            results.append(work(common, batch))
    except TransferError as exc:
        return results, exc
    except Exception as exc:  # a rank's bug: said by rank 0 in words, never a hang
        return results, f"{type(exc).__name__}: {exc}"
    return results, None


class Runner:
    """``workers.run`` over the ranks of ``comm`` (rank 0 calls it; the others are in ``serve``)."""

    def __init__(self, comm) -> None:
        self.comm = comm

    @property
    def ranks(self) -> int:
        return self.comm.Get_size()

    def run(self, batches: list, work, common, on_done, cost=len) -> None:
        shares = deal(batches, self.ranks, cost)
        rounds = min(ROUNDS, max((len(share) for share in shares), default=0))
        for k in range(rounds):
            self.round([share[k * len(share) // rounds:(k + 1) * len(share) // rounds] for share in shares],
                        work, common, on_done)

    def round(self, shares: list[list], work, common, on_done) -> None:
        """``shares[r]``: the batches rank ``r`` runs, once; ``on_done`` gets every batch's result here."""
        self.comm.bcast(("work", work, common), root=0)
        mine = self.comm.scatter(shares, root=0)
        own = _run_share(work, common, mine)
        gathered = self.comm.gather(own, root=0)
        for results, _ in gathered:
            for result in results:
                on_done(result)
        for rank, (_, error) in enumerate(gathered):
            if isinstance(error, TransferError):
                raise error
            if error:
                raise TransferError(f"Rank {rank} of the MPI job failed ({error}); nothing was finished.")

    def done(self) -> None:
        self.comm.bcast(("done", None, None), root=0)


def serve(comm) -> None:
    """A rank other than 0: take shares of work until rank 0 says done."""
    while True:
        what, work, common = comm.bcast(None, root=0)
        if what == "done":
            return
        mine = comm.scatter(None, root=0)
        comm.gather(_run_share(work, common, mine), root=0)
