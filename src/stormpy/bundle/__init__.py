"""Topology bundles (stormpy's "jar"): a zip of the user's code plus a ``MANIFEST.json`` of hashes.

A shared service: it never imports daemons. Build with :func:`build_bundle`, check with
:func:`verify_bundle`, extract with :func:`unpack_bundle`; every failure is a :class:`BundleError`.
"""

from stormpy.bundle.build import IGNORE_FILE, SKIPPED_DIRS, BundleInfo, build_bundle, iter_bundle_files
from stormpy.bundle.errors import BundleError
from stormpy.bundle.hashing import sha256_file, sha256_stream
from stormpy.bundle.manifest import FORMAT_VERSION, MANIFEST_NAME, Manifest, check_entry_name
from stormpy.bundle.verify import read_manifest, unpack_bundle, verify_bundle

__all__ = [
    "FORMAT_VERSION",
    "IGNORE_FILE",
    "MANIFEST_NAME",
    "SKIPPED_DIRS",
    "BundleError",
    "BundleInfo",
    "Manifest",
    "build_bundle",
    "check_entry_name",
    "iter_bundle_files",
    "read_manifest",
    "sha256_file",
    "sha256_stream",
    "unpack_bundle",
    "verify_bundle",
]
