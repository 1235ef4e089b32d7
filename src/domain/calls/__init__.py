"""Calls: what a caller gives and gets (pytrees, avals, one Signature), their wire names, and the front that
checks every call against the Signature before any runtime sees it."""
