"""The benchmark's contact scenes (bench/scenes.py): valid documents, the expected bodies, no initial overlap, and
reproducible from their seed; the saved hard states (bench/hard_states.py) round-trip."""

import math

import numpy as np
import pytest

from bench import scenes
from bench.hard_states import load_state, save_state
from core.contact import build_model, initial_state, step
from core.contact.bodies import origin_pose
from core.transforms import quat_to_matrix

SEEDS = (0, 1, 987654321)


def _world_aabb(model, state, i):
    """Exact axis-aligned bounds of body i from its shape's support points along +-x, +-y, +-z."""
    R = quat_to_matrix(state.q[i])
    dirs = np.vstack([np.eye(3), -np.eye(3)])
    pts = np.array([state.p[i] + R @ (model.shapes[i].support(R.T @ d) - model.com_body[i]) for d in dirs])
    return pts[[3, 4, 5], [0, 1, 2]], pts[[0, 1, 2], [0, 1, 2]]


@pytest.mark.parametrize("family", list(scenes.FAMILIES))
@pytest.mark.parametrize("seed", SEEDS)
def test_scene_is_valid_with_the_expected_bodies_and_no_overlap(family, seed):
    fam = scenes.FAMILIES[family]
    model = build_model(scenes.mechanism(family, seed))  # through core.io: a valid format-v1 document
    state = initial_state(model)
    assert int(model.dynamic.sum()) == fam.dynamic
    types = [model.shapes[i].type for i in np.flatnonzero(model.dynamic)]
    if family.startswith(("cubes", "stack", "layer")):
        assert set(types) == {"box"}
    if family.startswith("mixed"):
        assert len(types) >= 12 and {"sphere", "box", "cylinder", "ellipsoid", "polytope"} <= set(types)
    # sphere-sphere and shape-half-space pairs: exact distances; only the one-contact scenes start touching
    # (the sphere piles keep their historical jitter, which brings some spheres within tens of micrometres)
    deepest, checked = scenes.exact_overlap(model, state)
    assert checked > 0
    assert deepest >= -1e-12 if fam.dynamic == 1 else deepest > 0
    # every other pair: disjoint bounding boxes or disjoint bounding spheres (either rules out an overlap)
    for a, b, _mu in model.pairs:
        if model.halfspace[b] is not None or {model.shapes[a].type, model.shapes[b].type} == {"sphere"}:
            continue
        lo_a, hi_a = _world_aabb(model, state, a)
        lo_b, hi_b = _world_aabb(model, state, b)
        boxes_apart = np.any(lo_a > hi_b) or np.any(lo_b > hi_a)
        # (bounding spheres about the body origins, as the mixed pile is placed)
        oa, ob = origin_pose(model, state, a)[0], origin_pose(model, state, b)[0]
        spheres_apart = np.linalg.norm(oa - ob) > model.shapes[a].bounding_radius + model.shapes[b].bounding_radius
        assert boxes_apart or spheres_apart, (model.names[a], model.names[b])


@pytest.mark.parametrize("family", list(scenes.FAMILIES))
def test_a_seed_reproduces_its_scene_and_another_seed_changes_it(family):
    doc = scenes.FAMILIES[family].document
    assert doc(5) == doc(5)
    assert doc(5) != doc(6)


def test_cubes_are_slightly_turned_and_dropped_3_to_8_mm_one_cm_apart():
    for seed in SEEDS:
        model = build_model(scenes.mechanism("cubes4", seed))
        state = initial_state(model)
        dyn = np.flatnonzero(model.dynamic)
        for i in dyn:
            # turn angle from the quaternion's scalar part: 2 acos(w), between 0.5 and 3 degrees
            angle = math.degrees(2 * math.acos(min(1.0, abs(state.q[i][0]))))
            assert 0.5 - 1e-9 <= angle <= 3 + 1e-9
            lo, _hi = _world_aabb(model, state, i)
            assert 0.003 - 1e-12 <= lo[2] <= 0.008 + 1e-12  # the lowest corner above the floor
        # centres on a grid of pitch edge + 1 cm
        xs = sorted({round(float(state.p[i][0]), 9) for i in dyn})
        assert np.allclose(np.diff(xs), scenes.CUBE + 0.01)


def test_exact_overlap_measures_known_depths():
    # a cube (edge 0.1) turned 45 degrees about x has its lowest edge 0.05 sqrt(2) below its centre, so a centre at
    # 0.07 puts that edge 0.0707 - 0.07 into the floor (two spheres of r = 0.05 0.2 m apart stay clear)
    c, s = math.cos(math.pi / 8), math.sin(math.pi / 8)
    doc = scenes.document([scenes.FLOOR,
                           {"name": "a", "mass": 1, "shape": {"type": "sphere", "radius": 0.05},
                            "pose": {"position": [1, 0, 0.2]}},
                           {"name": "b", "mass": 1, "shape": {"type": "sphere", "radius": 0.05},
                            "pose": {"position": [1.2, 0, 0.2]}},
                           {"name": "cube", "mass": 1, "shape": {"type": "box", "size": [0.1, 0.1, 0.1]},
                            "pose": {"position": [-1, 0, 0.07], "orientation": [c, s, 0, 0]}}])
    model = build_model(scenes.load(doc))
    deepest, checked = scenes.exact_overlap(model, initial_state(model))
    assert checked == 4  # a-floor, b-floor, cube-floor, a-b (the cube-sphere pairs have no closed form here)
    assert deepest == pytest.approx(0.07 - 0.05 * math.sqrt(2), abs=1e-12)
    # the spheres' centres 0.099 m apart: they overlap by 1 mm; the cube lifted clear
    doc["bodies"][2]["pose"]["position"][0] = 1.099
    doc["bodies"][3]["pose"]["position"][2] = 0.2
    model = build_model(scenes.load(doc))
    assert scenes.exact_overlap(model, initial_state(model))[0] == pytest.approx(-0.001, abs=1e-12)


def test_overlap_of_two_cubes_from_their_poses():
    # two unturned cubes (edge 0.1) with centres 0.097 m apart along x overlap in a 3 mm slab: the largest ball in
    # both has radius 1.5 mm, so the bound 2 t is the depth 0.003 exactly; 0.101 m apart they do not overlap
    def cubes(dx):
        box = {"type": "box", "size": [0.1, 0.1, 0.1]}
        doc = scenes.document([{"name": "a", "mass": 1, "shape": box, "pose": {"position": [0, 0, 0.5]}},
                               {"name": "b", "mass": 1, "shape": box, "pose": {"position": [dx, 0.01, 0.52]}}])
        model = build_model(scenes.load(doc))
        return scenes.exact_overlap(model, initial_state(model))

    assert cubes(0.097)[0] == pytest.approx(-0.003, abs=1e-9)
    assert cubes(0.097)[1] == 1
    assert cubes(0.101) == (math.inf, 1)  # checked, no overlap


def test_a_saved_state_round_trips_and_steps_the_same(tmp_path):
    model = build_model(scenes.mechanism("pile8", 3))
    st = step(model, initial_state(model), 0.01).state  # a state with a warm start
    assert st.warm
    save_state(tmp_path / "s.npz", st, {"family": "pile8", "seed": 3})
    back, meta = load_state(tmp_path / "s.npz")
    assert meta == {"family": "pile8", "seed": 3}
    for name in ("p", "q", "v", "w"):
        assert np.array_equal(getattr(back, name), getattr(st, name))
    assert back.t == st.t and back.warm.keys() == st.warm.keys()
    r1, r2 = step(model, st, 0.01), step(model, back, 0.01)
    assert r1.converged and r2.converged and r1.iterations == r2.iterations
    assert np.array_equal(r1.state.p, r2.state.p)


def _plain_jitter(n_side, pitch, jitter, seed):
    """The sphere piles' jitter drawn without any check: (x, y) of every sphere in the generator's order."""
    rng = np.random.default_rng(seed)
    return np.array([[(i - 0.5 * (n_side - 1)) * pitch + jitter * rng.standard_normal(),
                      (j - 0.5 * (n_side - 1)) * pitch + jitter * rng.standard_normal()]
                     for i in range(n_side) for j in range(n_side) for _k in range(n_side)])


# seeds whose plain jitter starts two spheres overlapping, by 0.8-6 mm (found by a scan of the plain draws; four of
# them were scenes of the README's tables before the piles' jitter was drawn again on an overlap)
@pytest.mark.parametrize("family, seed", [("pile8", 3), ("pile8", 12), ("pile8", 200451027),
                                          ("pile27", 930508229), ("pile27", 1568965217), ("pile27-mu0.8", 554596866)])
def test_a_sphere_pile_whose_plain_jitter_overlaps_is_drawn_again_without_overlap(family, seed):
    n_side, pitch, jitter = (2, 0.11, 0.004) if family == "pile8" else (3, 0.12, 0.005)
    plain = _plain_jitter(n_side, pitch, jitter, seed)
    # the plain draw overlaps: two centres of one layer closer than a diameter (0.1 m)
    layer_of = np.array([k for _i in range(n_side) for _j in range(n_side) for k in range(n_side)])
    d = np.linalg.norm(plain[:, None] - plain[None], axis=2) + np.eye(len(plain))
    assert np.any((d < 0.1) & (layer_of[:, None] == layer_of[None]))
    model = build_model(scenes.mechanism(family, seed))
    deepest, _checked = scenes.exact_overlap(model, initial_state(model))
    assert deepest > 0


@pytest.mark.parametrize("family, seed", [("pile8", 0), ("pile8", 1), ("pile27", 0), ("pile27", 1694132259)])
def test_a_sphere_pile_whose_plain_jitter_is_clear_keeps_it(family, seed):
    n_side, pitch, jitter = (2, 0.11, 0.004) if family == "pile8" else (3, 0.12, 0.005)
    doc = scenes.FAMILIES[family].document(seed)
    xy = np.array([b["pose"]["position"][:2] for b in doc["bodies"] if b["name"].startswith("s")])
    np.testing.assert_array_equal(xy, _plain_jitter(n_side, pitch, jitter, seed))
