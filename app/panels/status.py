"""Status bar readouts: mobility, DOF versus drivers (rank-based once known, else the structure report's count), and
the last message."""

from __future__ import annotations

import shiboken6
from PySide6.QtWidgets import QLabel, QStatusBar

from core.kinematics.mobility import drivable_freedoms, redundant_text, verdict_awaits_rank
from core.run import run_kind

from .structure import MOBILITY_COLOURS

__all__ = ["StatusReadout"]


class StatusReadout:
    """Fills a QStatusBar from the document: permanent mobility/driver labels plus transient messages."""

    def __init__(self, bar: QStatusBar, document) -> None:
        self.bar, self.document = bar, document
        self.mobility = QLabel()
        self.mobility.setObjectName("statusMobility")
        self.drivers = QLabel()
        self.drivers.setObjectName("statusDrivers")
        for w in (self.drivers, self.mobility):
            w.setContentsMargins(8, 0, 8, 0)
        bar.addPermanentWidget(self.drivers)
        bar.addPermanentWidget(self.mobility)
        self.rank = None  # core.kinematics.RankMobility of the current geometry (computed off the GUI thread)
        self.rank_pending = False  # `rank` is None and being computed for the current geometry (it will arrive)
        document.changed.connect(self.refresh)
        self.refresh()

    def set_rank_mobility(self, rank, pending: bool = False) -> None:
        """Use this rank-based mobility. None: not known for the current geometry, the Gruebler count is shown; while
        it is `pending` (being computed) the drivers are not judged, as in the Structure panel (verdict_awaits_rank)."""
        pending = bool(pending) and rank is None
        if rank is self.rank and pending == self.rank_pending:
            return
        self.rank, self.rank_pending = rank, pending
        self.refresh()

    def refresh(self) -> None:
        """Re-read the structure report."""
        rep = self.document.structure()
        self.mobility.setText(f"<b>M = {rep.mobility}</b>")
        self.mobility.setToolTip(rep.mobility_formula)
        # DOF: the mechanism's freedoms, a floating part's (one attached to no ground) 3 or 6 rigid-body freedoms
        # included; the drivers are judged by those a driver can fix (the kinematics' driver check's count)
        nd, mob = rep.n_drivers, rep.mobility
        floating = rep.floating_freedoms
        tip = ("Gruebler–Kutzbach count (the rank-based mobility is being computed)" if self.rank_pending else
               "Gruebler–Kutzbach count (the rank-based mobility is not known for this geometry: it is computed when "
               "the motion runs)")
        if self.rank is not None:
            # rank-based mobility less idle freedoms (an RSSR coupler's spin)
            mob, floating = self.rank.effective, self.rank.floating_freedoms
            tip = (f"{self.rank.freedoms_text()} (Gruebler–Kutzbach count {rep.mobility}); "
                   f"{redundant_text(self.rank.redundant_constraints)}")
        if floating:
            tip += (f"; {floating} of the freedoms floating: of parts not attached to the ground, which no driver "
                    "fixes (the kinematics holds them in place)")
        self.drivers.setToolTip(tip)
        need = max(drivable_freedoms(rep, self.rank), 0)  # the freedoms a driver can fix
        contact = run_kind(self.document.mechanism) == "contact"
        if verdict_awaits_rank(rep, self.rank, self.rank_pending):
            # (the Gruebler count's verdict may be contradicted: a spatial four-bar of revolutes counts -2, has 1)
            state, color = "checking…", MOBILITY_COLOURS["checking"]
            tip += "; the drivers are judged once it has arrived"
        elif not rep.joints:  # free bodies: moved by gravity and contact when they have mass, else nothing to say
            state, color = (f"{mob} free (dynamics)" if contact and mob > 0 else ""), "#455a64"
        elif mob <= 0:
            state, color = "structure", "#b71c1c"
        elif nd > need:
            state, color = f"{nd - need} too many", "#b71c1c"
        elif nd == mob:
            state, color = "fully driven", "#1b5e20"
        elif contact:
            state, color = f"{mob - nd} free (dynamics)", "#455a64"  # gravity and contact move them: no warning
        elif nd < need:
            state, color = f"{need - nd} undriven" + (f", {floating} floating" if floating else ""), "#e65100"
        else:  # every freedom a driver can fix is driven; the floating part's stay (held in place by the kinematics)
            state, color = f"{floating} floating", "#455a64"
        self.drivers.setText(f"DOF {max(mob, 0)} · drivers {nd}" + (f" — <span style='color:{color}'>{state}</span>" if state else ""))

    def show(self, text: str, timeout_ms: int = 8000) -> None:
        """Show the last message (none once the window is gone: a field that held a refused entry refuses it again
        when it loses the focus as the window closes, after the status bar was deleted)."""
        if shiboken6.isValid(self.bar):
            self.bar.showMessage(text, timeout_ms)

    def withdraw(self, text: str) -> None:
        """The message `text` no longer holds (a refusal whose entry was taken back, Esc, another item selected):
        clear it if it is the one shown (a later message stays)."""
        if text and shiboken6.isValid(self.bar) and self.bar.currentMessage() == text:
            self.bar.clearMessage()
