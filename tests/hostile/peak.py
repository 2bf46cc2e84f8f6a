"""Run a command and write its own peak resident memory (KiB) to a file: ``python peak.py OUT CMD…``.

A child's ``ru_maxrss`` counts the memory its parent had when it was forked, so a command started straight from
a large test process (a pytest run holding hundreds of MiB) would report that. This small launcher is the
parent instead: what ``wait4`` says of its child is the child's own.
"""

import os
import signal
import subprocess
import sys


def main() -> int:
    out, argv = sys.argv[1], sys.argv[2:]
    proc = subprocess.Popen(argv)
    signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
    _, status, usage = os.wait4(proc.pid, 0)
    with open(out, "w") as fh:
        fh.write(str(usage.ru_maxrss))
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
