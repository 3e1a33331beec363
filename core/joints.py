"""The joint types of format v1: one table row per type (degrees of freedom, spaces, parameters)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .transforms import GENERATORS, RX, RY, RZ, TX, TY, TZ, elementary, frame_from_axis

__all__ = ["JointType", "JOINT_TYPES", "joint_type", "joint_dof", "joint_design_frame", "Motion"]

# One step of a joint's motion: (elementary motion TX..RZ, joint coordinate index, scale kind).
# Scale kind "1" uses the coordinate as is; "pitch" multiplies it by pitch / (2 pi) (helical advance per radian).
Motion = tuple[tuple[int, int, str], ...]


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
    # Motion of bodies[1] relative to bodies[0] as successive elementary motions about the joint's design frame F:
    # T_joint(q) = F · M(q) · F^-1 with M(q) the product of these steps in order.
    motion: Motion = ()
    # How F is built from the joint: "axis": origin `at`, z along `axis` (x along `axis2` when the type has one);
    # "plane": origin `at`, z normal to the x-y plane, x along `axis` (pin-in-slot of planar documents: the
    # rotation comes first, so the slide direction is fixed in bodies[1], which carries the slot; bodies[0] the pin).
    frame: str = "axis"

    def dof(self, space: str) -> int | None:
        """Freedoms this joint allows in `space` ("planar" or "spatial"); None if not allowed."""
        return self.dof_planar if space == "planar" else self.dof_spatial

    @property
    def n_coordinates(self) -> int:
        """Number of joint coordinates of the motion (as listed in `motion`)."""
        return 1 + max((c for _, c, _ in self.motion), default=-1)

    def scales(self, pitch: float | None = None) -> np.ndarray:
        """Per motion step, the factor multiplying its coordinate."""
        p = 0.0 if pitch is None else float(pitch)
        return np.array([p / (2.0 * np.pi) if s == "pitch" else 1.0 for _, _, s in self.motion])

    def design_frame(self, at, axis, axis2=None) -> np.ndarray:
        """The joint's design frame F (4x4, world coordinates of the design configuration)."""
        if self.frame == "plane":
            return frame_from_axis(at, (0.0, 0.0, 1.0), axis2=axis)
        return frame_from_axis(at, axis, axis2=axis2 if self.axis2 else None)

    def local_motion(self, q, pitch: float | None = None) -> np.ndarray:
        """M(q): the joint's motion in its design frame (4x4), the product of its elementary motions."""
        out = np.eye(4)
        for (kind, c, _), s in zip(self.motion, self.scales(pitch)):
            out = out @ elementary(kind, s * q[c])
        return out

    def local_jacobian(self, q, pitch: float | None = None) -> np.ndarray:
        """dM/dq_k for every coordinate k, shape (n_coordinates, 4, 4), from the generator matrices."""
        steps = [elementary(kind, s * q[c]) for (kind, c, _), s in zip(self.motion, self.scales(pitch))]
        out = np.zeros((self.n_coordinates, 4, 4))
        for i, ((kind, c, _), s) in enumerate(zip(self.motion, self.scales(pitch))):
            # d/dq of E_i(s q) = s E_i G_i, the other factors unchanged
            d = np.eye(4)
            for k, e in enumerate(steps):
                d = d @ (s * e @ GENERATORS[kind] if k == i else e)
            out[c] += d
        return out


JOINT_TYPES: dict[str, JointType] = {
    t.name: t
    for t in (
        JointType("revolute", "R", 1, 1, motion=((RZ, 0, "1"),), description="rotation about the axis"),
        JointType("prismatic", "P", 1, 1, motion=((TZ, 0, "1"),), description="sliding along the axis"),
        JointType("slot", "Sl", None, 2, motion=((RZ, 1, "1"), (TX, 0, "1")), frame="plane",  description="pin in slot: slide along the axis and rotate (higher pair)"),
        JointType("cylindrical", "C", 2, None, motion=((TZ, 0, "1"), (RZ, 1, "1")), description="slide along and rotate about the axis"),
        JointType("universal", "U", 2, None, axis2=True, motion=((RZ, 0, "1"), (RX, 1, "1")), description="rotations about the axis and axis2"),
        JointType("spherical", "S", 3, None, motion=((RX, 0, "1"), (RY, 1, "1"), (RZ, 2, "1")), description="any rotation about the point"),
        JointType("planar", "E", 3, None, motion=((TX, 0, "1"), (TY, 1, "1"), (RZ, 2, "1")), description="motion in the plane normal to the axis"),
        JointType("helical", "H", 1, None, pitch=True, motion=((RZ, 0, "1"), (TZ, 0, "pitch")), description="screw motion: pitch length per turn"),
        JointType("fixed", "F", 0, 0, motion=(), description="rigid connection"),
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


def joint_design_frame(joint) -> np.ndarray:
    """The design frame F (4x4, world) of a core.model.Joint, from its `at` and effective axes."""
    t = JOINT_TYPES[joint.type]
    return t.design_frame(joint.at, joint.axis_vector(), joint.axis2_vector() if t.axis2 else None)
