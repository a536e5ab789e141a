"""A person's say over effects: policies that pre-approve, decisions on paused runs (S3, S7)."""
