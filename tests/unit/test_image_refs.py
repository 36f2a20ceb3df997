"""Image names: how a chart's image is found and how containerd's CRI names it.
Source: distribution/reference ParseNormalizedNamed; Helm chart convention (image.tag defaults to appVersion)."""

import pytest
from conformance_lab.toolchain.images import oci, reference_image

from conformance import images as refs


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("dra-reference-driver:dev", "docker.io/library/dra-reference-driver:dev"),
        ("busybox", "docker.io/library/busybox:latest"),
        ("org/app:1", "docker.io/org/app:1"),
        ("registry.k8s.io/dra-example-driver/driver:v0.4.0", "registry.k8s.io/dra-example-driver/driver:v0.4.0"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("dra-conformance.local/pause:1", "dra-conformance.local/pause:1"),
    ],
)  # fmt: skip
def test_normalize_matches_the_cri_lookup_name(given, stored):
    assert refs.normalize(given) == stored


def test_normalize_refuses_a_bad_reference():
    with pytest.raises(oci.ImageError, match="not an image reference"):
        refs.normalize("Upper/Case:1")


def test_chart_image_defaults_the_tag_to_app_version(tmp_path):
    (tmp_path / "Chart.yaml").write_text('name: x\nappVersion: "v9.1"\n')
    (tmp_path / "values.yaml").write_text(
        'other:\n  repository: wrong\nimage:\n  repository: registry.example/x/y  # comment\n  tag: ""\n'
    )
    assert refs.chart_image(tmp_path) == "registry.example/x/y:v9.1"
    (tmp_path / "values.yaml").write_text("image:\n  repository: r/y\n  tag: dev\n")
    assert refs.chart_image(tmp_path) == "r/y:dev"


def test_chart_without_image_is_refused_with_the_file(tmp_path):
    (tmp_path / "Chart.yaml").write_text("name: x\n")
    (tmp_path / "values.yaml").write_text("replicas: 1\n")
    with pytest.raises(oci.ImageError, match="values.yaml: no image.repository"):
        refs.chart_image(tmp_path)


def test_reference_image_is_named_and_started_as_its_chart_and_dockerfile_say():
    dockerfile = (reference_image.SOURCE / "deploy" / "Dockerfile").read_text()
    assert reference_image.ref() == "docker.io/library/dra-reference-driver:dev"
    assert 'ENTRYPOINT ["python", "-m", "reference_driver"]' in dockerfile
    config = reference_image.image_config()
    assert config.entrypoint == ("python", "-m", "reference_driver") and config.workdir == "/app"
    assert "WORKDIR /app" in dockerfile and "PYTHONUNBUFFERED=1" in config.env
