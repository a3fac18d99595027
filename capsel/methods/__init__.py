"""Selection methods: one module each declares a method (its spec, scorer, tables and selector); the registry
finds them and the plugins other packages install."""
