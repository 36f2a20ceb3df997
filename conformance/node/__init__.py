"""Node access: CDI spec files, plugin registry sockets, PodResources, kubelet restarts (design.md §2)."""
