"""One transfer spread over a cluster's nodes through Slurm, watched as one job (``copy --cluster slurm``).

Where the command runs (a login node): ``plan`` lists what SRC holds (a study's runs, a folder's files) and deals
the files to N tasks by bytes; ``slurm`` submits them as one job array; ``watch`` follows the tasks through
``squeue`` and the progress each one writes beside DEST, resubmits what a failed, preempted or timed-out task
left, and cancels with ``scancel``; ``verify`` checks every file at its final name at the end and records the
whole job once in the History. On each node, ``task`` runs its share as one ordinary list job of this machine's
engine, writing through the destination module into the shared DEST.

Nothing here is imported by the engine or the backends; without ``--cluster`` nothing of it runs.
"""
