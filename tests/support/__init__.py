"""Test harness: real nodes on port 0 (in-process or as a child process) and a small client for
the management API. Nothing here mocks the node."""
