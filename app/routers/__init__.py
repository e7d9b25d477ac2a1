"""One router per resource; every API route lives under /api."""
