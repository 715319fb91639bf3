// Follows Roster's own version (core/version.py in the Roster repository); a test there fails when it, the
// package's version and Roster's differ.
export const VERSION = "1.0.0";
