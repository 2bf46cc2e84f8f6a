"""What kinds of file are compressed already: ``--compress auto`` does not even sample them on the wire, and
``labferry pack --compress zstd`` stores them as they are."""

from __future__ import annotations

COMPRESSED_SUFFIXES = (
    ".gz", ".bgz", ".bz2", ".xz", ".zst", ".zstd", ".lz4", ".zip", ".7z", ".rar", ".bam", ".cram", ".sra",
    ".bcf", ".fqz", ".dsrc", ".spring", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".h5", ".hdf5", ".npz",
    ".parquet", ".mp4", ".tgz", ".tbz2", ".txz", ".crai", ".bai", ".csi", ".tbi",
)


def compressed_already(name: str) -> bool:
    return name.lower().endswith(COMPRESSED_SUFFIXES)
