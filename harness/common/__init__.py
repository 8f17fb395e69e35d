"""Shared plumbing: errors and exit codes, marker lines, atomic and JSON-safe file writes."""
