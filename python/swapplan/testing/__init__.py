"""Test instruments shipped with swapplan, so that users can measure too
(residency.ResidencyMeter: what is really on the device at every op)."""
