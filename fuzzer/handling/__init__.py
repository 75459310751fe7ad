"""What happens to one finding: screening, determinism, reduction and localization, the
root-cause key, verification, and its bundle, a hit on a known one, or a pending finding.
"""
