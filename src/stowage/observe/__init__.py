"""Metrics and structured logs: no HTTP here, the http layer feeds them."""
