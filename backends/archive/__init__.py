"""Run folders as one tar archive: packed, listed and unpacked by several workers at once (``labferry pack``,
``ls``, ``unpack``), with an index as the archive's last member so a few files come out without reading the rest.

``layout`` plans every member's place before a byte is written; ``workers`` writes and reads pieces at those
places; ``pack`` and ``unpack`` drive them; ``index`` is the catalogue; ``scan`` reads a tar made elsewhere.
Files reach the disk only through ``backends.destination``.
"""
