"""cluster stage (not built yet; see the open issues)."""
