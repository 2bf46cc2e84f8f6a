"""Transfer backends: one package per protocol, no Qt, no application imports.

The tree shows the architecture:

* ``core``: the contract every backend implements (``base``: the interface and its optional abilities as
  named Protocols), its errors, the registry that finds backends by URL scheme, typed options, URL and
  checksum helpers;
* ``streams``: the shared machinery for splitting files over parallel streams (``parallel``, ``chunks``,
  ``partfile``, ``tuner``, ``hashing``, ``ratelimit``), one copy for every protocol;
* ``host``: this host and its processes (TCP settings, round-trip probes, child processes, pipes);
* one package per protocol: ``https``, ``ssh``, ``gridftp``, ``torrent``. None imports another.
"""
