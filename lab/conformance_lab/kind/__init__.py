"""kind clusters over the nerdctl provider: the provider, host clean-up, node access, the node image command."""
