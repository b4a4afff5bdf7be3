"""Test helpers for lfhttpd (see server.py)."""
