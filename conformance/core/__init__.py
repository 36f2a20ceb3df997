"""Pure core of the harness: errors, configuration, timeouts, names, the marker table. No I/O."""
