"""Offline container images: OCI image-layout archives written by Python, cached outside the repository by
their inputs, for the local cluster (pause, busybox) and for drivers deployed from their charts
(dra-example-driver, the reference driver). ``catalog`` lists them; ``dra-conformance images`` is the CLI.

Modules: ``oci`` (archive writer and verifier), ``store`` (cache entries), ``base`` (pause, busybox),
``debian`` (a rootfs from .debs), ``refs`` (image names, chart facts), ``example_driver``,
``reference_image``, ``ctr`` (import into a containerd), ``catalog``.
"""
