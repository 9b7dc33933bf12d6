"""stormpy: Apache Storm's model as a native Python runtime."""
