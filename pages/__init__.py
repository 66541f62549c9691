"""The Streamlit pages: thin shims that hand over to `ui/` (a package so import-linter sees them)."""
