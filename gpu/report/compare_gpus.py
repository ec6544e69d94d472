"""Which recorded runs Compare GPUs sets side by side: one per device and method, the rest folded.

Compare GPUs compares devices, not re-runs: of the committed ``gpu check`` runs holding vector add, the
newest of each (device, methodology version) is a peer; older runs of the same device and method are
folded ("superseded"), still listed with their provenance. A run whose breakdown has no "launch" phase
timed the kernel with Python's launch inside it (the first H200 run: 338 µs, "355 GB/s", where the
kernel alone takes about 40 µs); it is not a peer, and says why. Pure: no Streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpu.core.provenance import methodology_of
from gpu.service.references import ReferenceRun

NOT_A_PEER = ("its “kernel” time includes Python's launch of the kernel (the kernel was not yet timed alone), so "
              "it is not set beside the others")


@dataclass(frozen=True)
class RecordedPeers:
    """``peers``: the newest run per (device, method); ``folded``: (run, the peer that supersedes it);
    ``excluded``: (run, why it is not a peer)."""

    peers: tuple[ReferenceRun, ...]
    folded: tuple[tuple[ReferenceRun, ReferenceRun], ...]
    excluded: tuple[tuple[ReferenceRun, str], ...]


def _breakdown_phases(ref: ReferenceRun) -> dict:
    return dict((((ref.part("breakdown", "run") or {}).get("gpu") or {}).get("phases")) or {})


def recorded_peers(runs: Sequence[ReferenceRun]) -> RecordedPeers:
    """Split the hardware runs holding vector add (``runs`` newest first, as ``References.runs``)."""
    peers: dict[tuple[str, int], ReferenceRun] = {}
    folded, excluded = [], []
    for ref in runs:
        if not (ref.hardware and ref.has("vector-add")):
            continue
        if "launch" not in _breakdown_phases(ref):
            excluded.append((ref, NOT_A_PEER))
            continue
        group = (ref.provenance.device, methodology_of(ref.data))
        if group in peers:
            folded.append((ref, peers[group]))
        else:
            peers[group] = ref
    return RecordedPeers(tuple(peers.values()), tuple(folded), tuple(excluded))


__all__ = ["NOT_A_PEER", "RecordedPeers", "recorded_peers"]
