"""Selection methods behind one interface: the scorer contract, each method's spec, and CAP's scorer."""
