"""Pure file editors (CMake pins, the allowlist): text in, minimal text out, no I/O."""
