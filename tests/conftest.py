"""Suite-wide settings."""

from hypothesis import HealthCheck, settings

# No wall-clock limits in property tests: a loaded CI machine (two cores, a CPU hog beside
# the suite) makes a legitimate example slower than hypothesis' default 200 ms deadline.
# Tests that set their own @settings inherit these for what they leave out.
settings.register_profile("sfcheck", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("sfcheck")
