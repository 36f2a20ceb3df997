"""Node access: CDI spec files (cdi), plugin registration GetInfo (registration), PodResources, container
output and the visibility probe (crilog, probe), kubelet restarts (design.md §2)."""
