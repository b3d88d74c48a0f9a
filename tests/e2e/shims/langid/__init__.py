"""Stand-in (README.md): langid is not installable here (no Debian package)."""
