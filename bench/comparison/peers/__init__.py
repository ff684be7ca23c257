"""The peers: OpenVINO's CPU plugin, PyTorch, ONNX Runtime and NumPy, one module each.

Each module's setup follows implementations.py's contract and imports its runtime only when
called: available_peers imports the wanted ones, so that a run with --peers none loads none.
"""

from __future__ import annotations

from typing import Callable

from .numpy_peer import setup_numpy
from .onnxruntime_peer import setup_ort
from .openvino_peer import setup_openvino
from .torch_peer import setup_torch

PEERS = ["OpenVINO", "PyTorch", "ONNX Runtime", "NumPy"]
SETUP: dict[str, Callable] = {
    "OpenVINO": setup_openvino,
    "PyTorch": setup_torch,
    "ONNX Runtime": setup_ort,
    "NumPy": setup_numpy,
}
PEER_MODULES = {
    "OpenVINO": ["openvino"],
    "PyTorch": ["torch"],
    "ONNX Runtime": ["onnxruntime", "onnx"],
    "NumPy": ["numpy"],
}
# Peers whose result for duplicate targets without a reduction is documented as undefined.
UNORDERED_DUPLICATES = {"OpenVINO", "PyTorch", "ONNX Runtime"}


def parse_peers(text: str) -> list[str] | None:
    """--peers: None for all peers (empty text), [] for "none", else the peers named
    (case-insensitive, in PEERS order). Raises ValueError on a name that is no peer."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if not names:
        return None
    if names == ["none"]:
        return []
    unknown = sorted(set(names) - {p.lower() for p in PEERS})
    if unknown:
        raise ValueError(f"no such peer: {', '.join(unknown)} (peers: {', '.join(PEERS)}, none)")
    return [p for p in PEERS if p.lower() in names]


def available_peers(wanted: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The peers of `wanted` (None: all) that import, and why the others do not. A peer that
    is not wanted is not imported: an A/B run with --peers none loads no other runtime."""
    found, missing = [], {}
    for peer, modules in PEER_MODULES.items():
        if wanted is not None and peer not in wanted:
            continue
        try:
            for m in modules:
                __import__(m)
            found.append(peer)
        except ImportError as e:
            missing[peer] = f"not installed ({e.name})"
    return found, missing
