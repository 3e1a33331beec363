"""The transmission angle of the teaching analysis against the geometry of the closed-form positions."""

from __future__ import annotations

import numpy as np

from core.fourbar import FourBar, closed_form, transmission_angle


def test_transmission_angle_is_the_angle_between_coupler_and_rocker():
    fb = FourBar(g=4.0, a=1.0, b=3.5, c=3.0)  # the built-in crank-rocker
    t2 = np.linspace(-np.pi, np.pi, 181)
    for branch in (1, -1):
        t3, t4, ok = closed_form(fb, t2, branch)
        mu, ok2 = transmission_angle(fb, t2, branch)
        assert ok.all() and (ok == ok2).all()  # a crank-rocker closes at every crank angle
        # mu is the angle at C between C->B (direction t3 + pi) and C->D (direction t4 + pi): |t4 - t3| wrapped to [0, pi]
        expected = np.abs(np.angle(np.exp(1j * (t4 - t3))))
        np.testing.assert_allclose(mu, expected, atol=1e-12)
    # At crank angle 0 the diagonal BD = g - a = 3: cos mu = (b² + c² - 9) / (2 b c) = 12.25 / 21.
    assert transmission_angle(fb, 0.0)[0] == np.arccos(12.25 / 21)
