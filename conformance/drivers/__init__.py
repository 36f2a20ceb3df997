"""Driver deployers: one Protocol in base.py, one module per deploy mode (design.md §2)."""
