"""Contact dynamics of free rigid bodies: the geometrically implicit NCP time-stepper and its MCP solver.

    from core import io
    from core.contact import simulate
    rec = simulate(io.load("resources/examples/contact_sphere_drop.json"), t_end=1.0)
    rec.save("run.npz")

Modules: stepper (one step: its attempts, halving, the problem of a step), mcp (semismooth Newton MCP solver), ipm
(the conic interior point), bodies (model/state), pair (one pair's equations and analytic Jacobian), closest (broad
phase and closest points), plan (a step's structure and the per-run Workspace), explicit (the explicit method's pair
rows), joints (joints in a step), elements (the Newton systems' block elimination), kernels (the compiled
evaluations), compiling (the kernels' first-run compile in a child process that a stop ends: ensure_kernels), jam (a
failed step's jam: what the drivers press against what), recording (runs, .npz/.csv output).
"""

from .bodies import ContactModel, State, build_model, initial_state, touching_pairs
from .mcp import MCPResult, solve_mcp
from .recording import ContactFrame, ContactRun, Recording, iter_steps, load_npz, prepare_kernels, record, simulate
from .closest import closest_points
from .compiling import KernelsCancelled, ensure_kernels
from .stepper import METHODS, ContactResult, StepResult, step

__all__ = [
    "ContactModel", "State", "build_model", "initial_state", "MCPResult", "solve_mcp", "Recording", "ContactRun",
    "ContactFrame", "record", "iter_steps",
    "load_npz", "prepare_kernels", "simulate", "METHODS", "ContactResult", "StepResult", "closest_points", "step",
    "touching_pairs", "ensure_kernels", "KernelsCancelled",
]
