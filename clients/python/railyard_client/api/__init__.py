"""Generated from proto/railyard/v1 by scripts/gen-proto: do not edit."""
