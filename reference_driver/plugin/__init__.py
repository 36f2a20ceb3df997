"""Protocol plumbing only: plugin registration and the DRA gRPC services (v1, v1beta1) over unix sockets."""
