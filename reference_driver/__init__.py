"""Reference GPU DRA driver: a kubelet plugin speaking the real kubelet protocols (plugin registration,
DRA gRPC v1 and v1beta1), writing CDI specs and publishing ResourceSlices for simulated or NVML GPUs.

A product of its own: it never imports ``conformance`` and ``conformance`` never imports it.
"""

DRIVER_NAME = "gpu.dra-conformance.test"
"""Driver name: ResourceSlice.spec.driver, allocation results' driver, the registration name."""

CONFIG_API_VERSION = "gpu.dra-conformance.test/v1alpha1"
"""apiVersion of the driver's own opaque configuration (kind ``GpuConfig``)."""

__version__ = "0.1.0"
