"""Feature-gate modes: parsing the binary's --help list, choosing every DRA gate, runtime-config."""

from conformance_lab.local import gates

HELP = """
      --feature-gates colonSeparatedMultimapStringString
                 kube:AllAlpha=true|false (ALPHA - default=false)
                 kube:APIResponseCompression=true|false (BETA - default=true)
                 DRAAdminAccess=true|false (BETA - default=true)
                 kube:DRADeviceTaints=true|false (ALPHA - default=false)
                 DRAConsumableCapacity=true|false (ALPHA - default=false)
                 KubeletPodResourcesGet=true|false (BETA - default=true)
                 KubeletPodResourcesDynamicResources=true|false (BETA - default=true)
                 InPlacePodVerticalScaling=true|false (BETA - default=true)
"""


def test_known_gates_parses_stage_and_default():
    known = gates.known_gates(HELP)
    assert known["DRADeviceTaints"] == ("ALPHA", False)
    assert known["DRAAdminAccess"] == ("BETA", True)
    assert "InPlacePodVerticalScaling" in known


def test_all_mode_turns_on_every_dra_gate_and_the_podresources_gates_only():
    chosen = gates.select("all", gates.known_gates(HELP))
    assert chosen == {
        "DRAAdminAccess": True,
        "DRAConsumableCapacity": True,
        "DRADeviceTaints": True,
        "KubeletPodResourcesDynamicResources": True,
        "KubeletPodResourcesGet": True,
    }
    assert gates.flag_value(chosen).startswith("DRAAdminAccess=true,DRAConsumableCapacity=true")


def test_defaults_mode_sets_nothing():
    assert gates.select("defaults", gates.known_gates(HELP)) == {}
    assert gates.runtime_config("defaults", "v1.34.4") == ""
    assert gates.served_versions("defaults", "v1.34.4") == ["v1"]


def test_all_mode_runtime_config_enables_alpha_and_beta_resource_versions():
    rc = gates.runtime_config("all", "v1.35.4")
    assert rc == "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true,resource.k8s.io/v1alpha3=true"
    assert gates.served_versions("all", "v1.35.4") == ["v1", "v1beta1", "v1beta2", "v1alpha3"]


def test_workload_claims_gate_brings_generic_workload():
    known = {"DRAWorkloadResourceClaims": ("ALPHA", False), "GenericWorkload": ("ALPHA", False)}
    assert gates.select("all", known)["GenericWorkload"] is True


def test_generic_workload_enables_the_release_workload_api():
    rc = gates.runtime_config("all", "v1.37.2", {"GenericWorkload": True})
    assert rc.endswith(",scheduling.k8s.io/v1beta1=true")
    assert "scheduling" not in gates.runtime_config("all", "v1.37.2", {})
    assert gates.served_versions("all", "v1.37.2") == ["v1", "v1beta1", "v1beta2", "v1alpha3"]
