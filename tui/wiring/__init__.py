"""The composition root: the one package that puts sources, session, launch and views together.

Commands parse their options into ``tui.core.options`` objects and call one function
here; nothing below this package imports the command line, and no view builds a source.
One module per front end: ``watch`` (and the ``--server`` profile), ``recordings``
(record, replay), ``launch`` (run, attach) and ``cluster`` (several nodes, Slurm).
"""

from tui.wiring.cluster import make_cluster, nodes_attach, nodes_run, slurm_attach, slurm_launch, slurm_run, watch_cluster
from tui.wiring.launch import launch_dashboard, launch_plain, make_launch, preflight_for, run_plain
from tui.wiring.recordings import play_recording, record, replay_session, static_session
from tui.wiring.watch import load_profile, watch_dashboard, watch_plain

__all__ = [
    "launch_dashboard",
    "launch_plain",
    "load_profile",
    "make_cluster",
    "make_launch",
    "nodes_attach",
    "nodes_run",
    "play_recording",
    "preflight_for",
    "record",
    "replay_session",
    "run_plain",
    "slurm_attach",
    "slurm_launch",
    "slurm_run",
    "static_session",
    "watch_cluster",
    "watch_dashboard",
    "watch_plain",
]
