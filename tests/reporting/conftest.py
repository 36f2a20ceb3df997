"""The sample suite is run by the reporting tests in a child pytest; never collected directly."""
collect_ignore = ["sample_suite"]
