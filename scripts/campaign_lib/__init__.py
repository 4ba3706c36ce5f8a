"""Helpers of scripts/mutation_campaign.py (python3 standard library only)."""
