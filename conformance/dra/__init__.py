"""DRA domain logic over API objects: inventory, partitions, shares, counters, taints, claim status, checks."""
