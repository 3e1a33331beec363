"""The Bennett linkage's closed design configuration, shared by the kinematics and the contact tests."""

import math

import numpy as np

from core.transforms import compose, rot_x, rot_z, trans_x


def bennett_loop(a: float, alpha: float, beta: float, th1: float):
    """Joint points and axes of a closed Bennett loop at crank angle th1.

    DH loop (a, alpha), (b, beta), (a, alpha), (b, beta) with the Bennett condition a / sin(alpha) = b / sin(beta);
    closure: th3 = -th1, th4 = -th2, tan(th1/2) tan(th2/2) = sin((beta+alpha)/2) / sin((beta-alpha)/2) (the sign
    of th2 and th4 depends on the DH convention: the one that closes the loop to 1e-12 is taken).  Joint i sits at
    the origin of frame i-1 with its axis along z of frame i-1."""
    b = a * math.sin(beta) / math.sin(alpha)
    k = math.sin((beta + alpha) / 2) / math.sin((beta - alpha) / 2)
    th2 = 2 * math.atan(k / math.tan(th1 / 2))
    links = [(a, alpha), (b, beta), (a, alpha), (b, beta)]

    def frames_of(ths):
        out, T = [np.eye(4)], np.eye(4)
        for th, (L, tw) in zip(ths, links):
            T = T @ compose(rot_z(th), trans_x(L), rot_x(tw))
            out.append(T)
        return out

    frames = next(f for f in (frames_of([th1, s * th2, -th1, t * th2]) for s in (1, -1) for t in (-1, 1))
                  if np.abs(f[-1] - np.eye(4)).max() < 1e-12)
    return [f[:3, 3] for f in frames[:4]], [f[:3, 2] for f in frames[:4]]
