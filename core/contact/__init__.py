"""Contact dynamics of free rigid bodies: the geometrically implicit NCP time-stepper and its MCP solver.

    from core import io
    from core.contact import simulate
    rec = simulate(io.load("resources/examples/contact_sphere_drop.json"), t_end=1.0)
    rec.save("run.npz")

Modules: mcp (semismooth Newton MCP solver), bodies (model/state), pair (one pair's equations and analytic
Jacobian), stepper (implicit and explicit steps), recording (runs, .npz/.csv output).
"""

from .bodies import ContactModel, State, build_model, initial_state
from .mcp import MCPResult, solve_mcp
from .recording import ContactFrame, ContactRun, Recording, iter_steps, load_npz, prepare_kernels, record, simulate
from .stepper import METHODS, ContactResult, StepResult, closest_points, step

__all__ = [
    "ContactModel", "State", "build_model", "initial_state", "MCPResult", "solve_mcp", "Recording", "ContactRun",
    "ContactFrame", "record", "iter_steps",
    "load_npz", "prepare_kernels", "simulate", "METHODS", "ContactResult", "StepResult", "closest_points", "step",
]
