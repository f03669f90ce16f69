"""The book layer: chapter orchestration, sizes and published numbers (never imported by the core)."""
