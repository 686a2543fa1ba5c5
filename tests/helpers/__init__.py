"""Helpers shared by the tests: envs, policies, factories, media and page readers."""
