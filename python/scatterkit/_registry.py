"""The versioned operations, described once: `get_op`, `run_batch`, the Spark job's spec,
the column functions and the tests all read this table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The reductions of ScatterElementsUpdate-12 and of ScatterNDUpdate-15.
ELEMENTS_REDUCTIONS = ("none", "sum", "prod", "min", "max", "mean")
ND_REDUCTIONS = ("none", "sum", "sub", "prod", "min", "max")

_INDEXED = ("data", "indices", "updates")


@dataclass(frozen=True)
class OpVersion:
    """One OpenVINO operation version."""

    name: str  # the versioned name, "ScatterElementsUpdate-12"
    kernel: str  # the compiled entry (and run_batch's kind): "scatter_elements_update"
    negative_indices: bool  # indices may count from the end
    reductions: tuple[str, ...]  # () when the version has no reduction attribute
    inputs: tuple[str, ...]  # tensor inputs, in the operation's order
    required: frozenset[str]  # attributes without a default
    defaults: dict[str, Any] = field(default_factory=dict)  # the others, with their defaults

    @property
    def attributes(self) -> frozenset[str]:
        return self.required | frozenset(self.defaults)


OPS: dict[str, OpVersion] = {
    op.name: op
    for op in (
        OpVersion("ScatterUpdate-3", "scatter_update", False, (), _INDEXED, frozenset({"axis"})),
        OpVersion(
            "ScatterElementsUpdate-3",
            "scatter_elements_update",
            False,
            (),
            _INDEXED,
            frozenset({"axis"}),
        ),
        OpVersion(
            "ScatterElementsUpdate-12",
            "scatter_elements_update",
            True,
            ELEMENTS_REDUCTIONS,
            _INDEXED,
            frozenset({"axis"}),
            {"reduction": "none", "use_init_val": True, "exact": False},
        ),
        OpVersion("ScatterNDUpdate-3", "scatter_nd_update", False, (), _INDEXED, frozenset()),
        OpVersion(
            "ScatterNDUpdate-15",
            "scatter_nd_update",
            True,
            ND_REDUCTIONS,
            _INDEXED,
            frozenset(),
            {"reduction": "none", "exact": False},
        ),
        OpVersion(
            "SliceScatter-15",
            "slice_scatter",
            True,
            (),
            ("data", "updates"),
            frozenset({"start", "stop", "step", "axis"}),
        ),
    )
}


def op_version(name: Any, caller: str) -> OpVersion:
    """The version named `name`, or a ValueError listing the known ones."""
    try:
        return OPS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"{caller}: unknown operation {name!r}; expected one of {sorted(OPS)}"
        ) from None
