"""Self-validation of the suite (design.md §11): the fault-detection matrix behind ``dra-conformance validate-suite``.

``faultfile`` reads and checks ``fixtures/faults.yaml``; ``verdict`` decides caught / missed per (fault, test);
``runs`` starts one ``dra-conformance run`` per fault and reads its results; ``report`` writes the matrix
report; ``cli`` is the subcommand.
"""
