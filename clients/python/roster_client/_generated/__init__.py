"""Generated from Roster's OpenAPI document (scripts/clients-generate.sh). Do not edit."""
