"""The joint types of format v1: one table row per type (degrees of freedom, spaces, parameters)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["JointType", "JOINT_TYPES", "joint_type", "joint_dof"]


@dataclass(frozen=True)
class JointType:
    """What the format and the structure analysis know about one joint type."""

    name: str  # the format's `type` string
    letter: str  # symbol drawn on graph edges
    dof_spatial: int | None  # freedoms in a spatial document (None: not allowed there)
    dof_planar: int | None  # freedoms in a planar document (None: not allowed there)
    axis2: bool = False  # needs a second axis (universal)
    pitch: bool = False  # has a pitch (helical)
    description: str = ""

    def dof(self, space: str) -> int | None:
        """Freedoms this joint allows in `space` ("planar" or "spatial"); None if not allowed."""
        return self.dof_planar if space == "planar" else self.dof_spatial


JOINT_TYPES: dict[str, JointType] = {
    t.name: t
    for t in (
        JointType("revolute", "R", 1, 1, description="rotation about the axis"),
        JointType("prismatic", "P", 1, 1, description="sliding along the axis"),
        JointType("slot", "Sl", None, 2, description="pin in slot: slide along the axis and rotate (higher pair)"),
        JointType("cylindrical", "C", 2, None, description="slide along and rotate about the axis"),
        JointType("universal", "U", 2, None, axis2=True, description="rotations about the axis and axis2"),
        JointType("spherical", "S", 3, None, description="any rotation about the point"),
        JointType("planar", "E", 3, None, description="motion in the plane normal to the axis"),
        JointType("helical", "H", 1, None, pitch=True, description="screw motion: pitch length per turn"),
        JointType("fixed", "F", 0, 0, description="rigid connection"),
    )
}


def joint_type(name: str) -> JointType:
    """The table row of the joint type `name` (KeyError if unknown)."""
    return JOINT_TYPES[name]


def joint_dof(name: str, space: str) -> int:
    """Freedoms of joint type `name` in `space`; 0 for unknown or disallowed types."""
    t = JOINT_TYPES.get(name)
    d = t.dof(space) if t else None
    return d if d is not None else 0
