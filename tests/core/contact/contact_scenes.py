"""Scene builders and the per-step invariants every contact test checks."""

import json
import math

import numpy as np

from core import io
from core.contact import build_model, simulate

G = 9.81


def mechanism(bodies, mu=0.5, ellipsoid=(1, 1, 0), gravity=(0, 0, -G), pairs=()):
    """A format-v1 mechanism from body dicts."""
    doc = {"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": list(gravity),
           "bodies": bodies, "contact": {"friction": mu, "ellipsoid": list(ellipsoid), "pairs": list(pairs)}}
    return io.loads(json.dumps(doc))


def floor():
    return {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}


def body(name, shape, mass=1.0, position=(0, 0, 0), orientation=(1, 0, 0, 0), linear=(0, 0, 0), angular=(0, 0, 0)):
    return {"name": name, "mass": mass, "shape": shape,
            "pose": {"position": list(position), "orientation": list(orientation)},
            "velocity": {"linear": list(linear), "angular": list(angular)}}


def incline_gravity(alpha):
    """Gravity for a plane tilted by alpha about y: the floor stays z = 0, gravity pulls along +x and -z."""
    return (G * math.sin(alpha), 0.0, -G * math.cos(alpha))


def run(mech, t_end, dt=0.01, method="implicit"):
    model = build_model(mech)
    rec = simulate(model, t_end=t_end, dt=dt, method=method)
    return model, rec


def check_invariants(model, rec, *, gap_tol=1e-9, check_gap=True, energy=True):
    """Every step: gap >= -1e-9; pn*gap <= 1e-9, impulses in the friction ellipsoid and friction opposing slip (on
    steps solved whole, see below); total energy (kinetic + gravity potential) never increasing; and no NaN anywhere."""
    for name in ("position", "orientation", "velocity", "angular", "gap", "pn", "pf", "point_a", "residual"):
        assert np.all(np.isfinite(getattr(rec, name))), name
    act = rec.active
    if check_gap:
        assert np.all(rec.gap[act] >= -gap_tol), rec.gap[act].min()
    assert np.all(rec.pn >= -1e-12)
    # complementarity, the friction ellipsoid and friction opposing slip hold in each solve; a step the stepper had
    # to halve reports the impulses summed over its sub-steps, split along the normal at the end, with the geometry
    # and slip at the end (a contact loaded in the first half may have opened, turned its normal or its slip in the
    # second), so these three are checked on the steps solved whole
    whole = (rec.halvings == 0)[:, None]
    assert np.all((rec.pn * np.maximum(rec.gap, 0.0))[act & whole] <= 1e-9)
    e_t, e_o, e_r = model.ellipsoid
    for p, (_a, _b, mu) in enumerate(model.pairs):
        n = rec.normal[:, p]
        pf = rec.pf[:, p]
        # isotropic tangential part (e_t = e_o in every scene here) plus torsion
        lhs = np.sum(pf * pf, axis=1) / e_t**2 + (rec.pr[:, p] / e_r) ** 2 if e_r > 0 else np.sum(pf * pf, axis=1) / e_t**2
        assert np.all((lhs <= (mu * rec.pn[:, p]) ** 2 * (1 + 1e-7) + 1e-18)[whole[:, 0]])
        assert np.all(np.abs(np.sum(pf * n, axis=1)) <= 1e-9 + 1e-9 * rec.pn[:, p])  # tangential
        # friction opposes slip: pf . v_slip <= 0 with the slip the friction rows measure (core.contact.pair.
        # carried_slip), written out here: the end-of-step relative velocity with its rotational part turned back by
        # the shared rotation's half step, v_A - v_B + M (wA x d1 - wB x d2), d the lever arms from the centres of
        # mass to the contact points, M = (I + h [ws]x / 2)^-1, ws = (wA . wB) / (|wA|^2 + |wB|^2) (wA + wB)
        dyn = list(np.flatnonzero(model.dynamic))
        ja = dyn.index(_a)
        ca = _centres(model, rec, _a, ja)
        wa = rec.angular[:, ja]
        va_c = rec.velocity[:, ja] + np.cross(wa, ca - rec.position[:, ja])  # velocity of A's centre of mass
        d1 = rec.point_a[:, p] - ca
        va = va_c + np.cross(wa, d1)
        if model.dynamic[_b]:
            jb = dyn.index(_b)
            cb = _centres(model, rec, _b, jb)
            wb = rec.angular[:, jb]
            vb_c = rec.velocity[:, jb] + np.cross(wb, cb - rec.position[:, jb])
            d2 = rec.point_b[:, p] - cb
            h = rec.t[1] - rec.t[0]
            q = np.sum(wa * wa + wb * wb, axis=1)
            ws = (np.sum(wa * wb, axis=1) / np.where(q > 0, q, 1.0))[:, None] * (wa + wb)
            rot = np.cross(wa, d1) - np.cross(wb, d2)
            va = va_c - vb_c + np.array([np.linalg.solve(np.eye(3) + 0.5 * h * _skew(wk), rk) for wk, rk in zip(ws, rot)])
        slip = va - np.sum(va * n, axis=1)[:, None] * n
        assert np.all(np.sum(pf * slip, axis=1)[act[:, p] & whole[:, 0]] <= 1e-10)
    if energy:
        E = total_energy(model, rec)
        assert np.all(np.diff(E) <= 1e-9 * (1 + np.abs(E[:-1]))), np.diff(E).max()


def _centres(model, rec, i, j):
    """World positions of model body i's centre of mass over the recording (j its index among the dynamic bodies)."""
    return rec.position[:, j] + np.array([_qm(q) @ model.com_body[i] for q in rec.orientation[:, j]])


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def total_energy(model, rec):
    """Kinetic + gravitational potential energy per row (J)."""
    K = rec.kinetic_energy()
    g = model.gravity
    dyn = np.flatnonzero(model.dynamic)
    U = np.zeros(rec.n_frames)
    for j, i in enumerate(dyn):
        R = np.array([_qm(q) for q in rec.orientation[:, j]])
        pc = rec.position[:, j] + R @ model.com_body[i]
        U -= model.mass[i] * pc @ g
    return K + U


def _qm(q):
    from core.transforms import quat_to_matrix
    return quat_to_matrix(q)
