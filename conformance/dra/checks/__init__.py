"""Driver-agnostic invariant checks over API objects (pure functions, no cluster access): what the API and the
KEPs require of a driver's ResourceSlices (``slices``) and of the allocations a test produced
(``allocations``). Each check returns a list of :class:`~conformance.dra.checks.base.Violation`; an empty list means
the objects satisfy the rule. Suites reach them through ``conformance.api``; the plugin runs them after every
test module."""
