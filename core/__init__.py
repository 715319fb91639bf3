"""What every surface shares and nothing owns: pieces that import no Roster app (no models, no views)."""
