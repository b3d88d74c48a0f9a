"""Stand-in (README.md): pyworld is not installable here; compute_f0 is for GAN recipes only."""
