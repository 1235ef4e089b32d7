"""Services that wire the adapters into the domain; what a user calls."""
