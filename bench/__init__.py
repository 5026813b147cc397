"""Performance benchmark: Stowage against nginx and OpenStack Swift (scripts/bench)."""
