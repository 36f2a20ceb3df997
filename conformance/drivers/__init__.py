"""Driver deployers: the contract in base.py, one module per deploy mode, registered by name in
:mod:`conformance.drivers.builtin` (design.md §2)."""
