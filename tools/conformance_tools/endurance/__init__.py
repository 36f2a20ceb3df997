"""Endurance and side-by-side runs of the main job on local clusters: ``soak`` and ``multi-cluster``."""
