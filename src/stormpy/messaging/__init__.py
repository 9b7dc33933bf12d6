"""Moving tuples between workers: the Transport interface, codec and implementations."""
