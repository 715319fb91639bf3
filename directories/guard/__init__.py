"""The deprovision guard (contract §4.2): one mistake in an identity provider must not lock a customer out.

A *deprovision* takes an active user out (a SCIM DELETE of an active user, or `active` true → false). The
guard counts the deprovisions of a sliding window and, when the next one would exceed both `max_users` and
`max_percent` % of the users active at the window's start, trips: that deprovision and every later one are
held, answered to the identity provider as if applied, until a person approves or discards them.

- `rules`: the setting (defaults, validation of a PATCH) and the window's arithmetic, without a database;
- `services`: what the SCIM store calls under its locks (count or trip, hold a change) and the resolutions
  (approve, discard), which apply held changes with their events;
- `selectors`: the held changes, the guard's state, the identity provider's view of a held user;
- `rendering`: the Directory's `guard` and a held change as the APIs show them.

How the pieces fit, and the choices made: docs/deprovision-guard.md.
"""
