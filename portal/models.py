"""The portal keeps no state of its own: sign-in failures are counted by adminauth.throttle, with the
admin API's, in adminauth.models.LoginFailure."""
