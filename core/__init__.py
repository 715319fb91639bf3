"""What every surface shares and nothing owns: small, dependency-free pieces (no models, no views)."""
