# Follows Roster's own version (core/version.py in the Roster repository); a test there fails when they differ.
__version__ = "1.0.0"
