"""The CRI container log format the kubelet writes under ``/var/log/pods/<ns>_<pod>_<uid>/<container>/*.log``.

Source: kubelet/CRI logging (k8s.io/cri-api "CRI container log format"): each line is
``<RFC3339Nano time> <stream: stdout|stderr> <tag: F|P> <text>``.
"""

from __future__ import annotations

POD_LOGS = "/var/log/pods"  # the kubelet's pod log root on a node


def log_dir(namespace: str, pod: str, uid: str, container: str, root: str = POD_LOGS) -> str:
    """The directory of one container's CRI log files below ``root``."""
    return f"{root}/{namespace}_{pod}_{uid}/{container}"


def output(text: str) -> str:
    """The container's own output from CRI log ``text`` (time, stream and tag stripped; lines without them
    kept as they are), newline-terminated."""
    lines = []
    for line in text.splitlines():
        parts = line.split(" ", 3)
        lines.append(parts[3] if len(parts) == 4 else line)
    return "\n".join(lines) + "\n"
