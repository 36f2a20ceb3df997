def test_a_run_is_raised_to_its_faults_oldest_release(tmp_path):
    """s16: a fault whose test skips below a minor (min_k8s) runs there even when the matrix asks for less."""
    from conformance_tools.validation import runs

    plan = runs.Plan("f", "f", ("suites/x.py",), "full", 0.2, (), (), tmp_path, "1.35")
    assert runs.version_floor(plan, ["--k8s-version", "1.34"]) == ["--k8s-version", "1.35"]
    assert runs.version_floor(plan, ["--k8s-version", "1.36"]) == []
    assert runs.version_floor(runs.Plan("f", "f", (), "full", 0.2, (), (), tmp_path), ["--k8s-version", "1.34"]) == []
    cmd = runs.command(plan, ["--k8s-version", "1.34"])
    assert cmd[len(cmd) - 1 - cmd[::-1].index("--k8s-version") + 1] == "1.35"  # the last one wins in argparse
