"""``dra-conformance bench``: a DRA scheduling benchmark on the local cluster with kwok fake nodes.

The reference driver's fleet mode publishes ResourceSlices for every fake node; pods with
ResourceClaimTemplates (and variants: CEL selector, matchAttribute, prioritized list, shared claims) are
created and watched until bound; the same workload with a classic extended resource gives the DRA/classic
ratio. Results: ``reports/bench/<id>/`` (bench.json, PNG plots, summary.md, Allure HTML).
Modules: config (options), stats (percentiles), workload (objects), measure (watch timing), fleet (fake
nodes and the fleet process), report (JSON, plots, summary, Allure), run (orchestration), cli.
"""
